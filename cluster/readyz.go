package cluster

import "strings"

// BootstrapReconcileChecks are kube-apiserver readiness checks of
// post-start hooks that only make sure bootstrap objects exist, and that
// take a second at least, whatever etcd holds: both first look after a
// second (wait.Poll(1*time.Second, 30*time.Second, ...): k8s.io/kubernetes
// pkg/registry/rbac/rest/storage_rbac.go, PolicyData.EnsureRBACPolicy;
// pkg/registry/scheduling/rest/storage_scheduling.go,
// AddSystemPriorityClasses). On an etcd that already holds those objects
// (a restarted server's, a restored bootstrapped one's) they find them and
// write nothing (cluster/local's TestTemplateHooksWriteNothing), so a
// server whose other checks pass serves as it will once they pass too.
var BootstrapReconcileChecks = []string{
	"poststarthook/rbac/bootstrap-roles",
	"poststarthook/scheduling/bootstrap-system-priority-classes",
}

// ReadyzBootstrapped is the readiness path of a kube-apiserver over an
// etcd that holds its bootstrap objects: /readyz without
// BootstrapReconcileChecks.
func ReadyzBootstrapped() string {
	return "/readyz?exclude=" + strings.Join(BootstrapReconcileChecks, "&exclude=")
}
