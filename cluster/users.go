package cluster

import (
	"context"
	"fmt"

	"github.com/informer-conformance/informer-conformance/cluster/internal/pki"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// TestUserRole is the ClusterRole (and binding) that gives TestUser what
// informers under test need: read and write pods, configmaps, secrets,
// events and namespaces, and the suite's custom resources (fixtures/crds),
// and nothing else.
const TestUserRole = "informer-conformance:test-user"

// GrantTestUser creates TestUserRole and binds it to TestUser; both may
// exist already (a backend reused across runs).
func GrantTestUser(ctx context.Context, cs kubernetes.Interface) error {
	verbs := []string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"}
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: TestUserRole},
		Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{""},
			Resources: []string{"pods", "configmaps", "secrets", "events", "namespaces"},
			Verbs:     verbs,
		}},
	}
	crs, err := CRDResources()
	if err != nil {
		return fmt.Errorf("create test-user role: %w", err)
	}
	for _, r := range crs {
		role.Rules = append(role.Rules, rbacv1.PolicyRule{APIGroups: []string{r.Group}, Resources: []string{r.Resource}, Verbs: verbs})
	}
	if _, err := cs.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create test-user role: %w", err)
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: TestUserRole},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: TestUserRole},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: string(TestUser)}},
	}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create test-user binding: %w", err)
	}
	return nil
}

// IssueClientCert signs a client certificate for user (and groups) with the
// cluster's CA (PEM certificate and key, as kubeadm writes them) and returns
// the certificate and a new key, PEM encoded.
func IssueClientCert(caCertPEM, caKeyPEM []byte, user string, groups []string) (certPEM, keyPEM []byte, err error) {
	ca, err := pki.ParseCA(caCertPEM, caKeyPEM)
	if err != nil {
		return nil, nil, err
	}
	return ca.Issue(pki.Spec{CN: user, Orgs: groups, Client: true})
}

// WriteKubeconfig writes a kubeconfig for cfg (certificate data inline) to path.
func WriteKubeconfig(path string, cfg *rest.Config, name string) error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters[name] = &clientcmdapi.Cluster{
		Server:                   cfg.Host,
		CertificateAuthority:     cfg.TLSClientConfig.CAFile,
		CertificateAuthorityData: cfg.TLSClientConfig.CAData,
		TLSServerName:            cfg.TLSClientConfig.ServerName,
	}
	kc.AuthInfos[name] = &clientcmdapi.AuthInfo{
		ClientCertificate:     cfg.TLSClientConfig.CertFile,
		ClientCertificateData: cfg.TLSClientConfig.CertData,
		ClientKey:             cfg.TLSClientConfig.KeyFile,
		ClientKeyData:         cfg.TLSClientConfig.KeyData,
		Token:                 cfg.BearerToken,
	}
	kc.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name}
	kc.CurrentContext = name
	return clientcmd.WriteToFile(*kc, path)
}

// FileCredentials are the files a kubeconfig names by path: the CA a
// client verifies the apiserver with, its certificate and key.
type FileCredentials struct {
	CAFile, CertFile, KeyFile string
}

// WriteFileKubeconfig writes a kubeconfig for user against server (TLS
// verified as serverName when set) that names f's files by path, never
// inline, so client-go reloads them (CertRotator.FileKubeconfig).
func WriteFileKubeconfig(path, name string, user User, server, serverName string, f FileCredentials) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[name] = &clientcmdapi.Cluster{Server: server, CertificateAuthority: f.CAFile, TLSServerName: serverName}
	cfg.AuthInfos[string(user)] = &clientcmdapi.AuthInfo{ClientCertificate: f.CertFile, ClientKey: f.KeyFile}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: string(user)}
	cfg.CurrentContext = name
	return clientcmd.WriteToFile(*cfg, path)
}
