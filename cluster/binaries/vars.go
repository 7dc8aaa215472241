package binaries

import "github.com/informer-conformance/informer-conformance/cluster"

// Vars are the environment variables that select and find the binaries,
// for the backends that run them to declare (cluster.Backend.Vars).
var Vars = []cluster.Var{
	{Name: EnvKubeVersion, Doc: "the kube-apiserver version the clusters run (1.31.x-1.37.x; built from source 1.33.x-1.37.x only; default " + DefaultKubeVersion + ")"},
	{Name: EnvEtcdVersion, Doc: "the etcd version the local clusters run (3.5.x-3.7.x; default " + DefaultEtcdVersion + ")"},
	{Name: EnvAssets, Kind: cluster.Paths, Doc: "a directory of prebuilt kube-apiserver, etcd and etcdutl: nothing is built, the versions are what they say"},
	{Name: EnvCacheDir, Kind: cluster.Paths, Doc: "the root of what the suite builds (default: the user cache directory's informer-conformance)"},
	{Name: EnvKubeReleases, Doc: "where kube-apiserver release binaries are fetched from before building one (none: build only)"},
	{Name: EnvUpgradeFrom, Doc: "the kube-apiserver version S25's rolling upgrade starts from (default: the pinned patch of the minor before)"},
}

// VersionsIn are the versions env selects (EnvKubeVersion,
// EnvEtcdVersion), defaults filled in and validated.
func VersionsIn(env cluster.Env) (Versions, error) {
	return Versions{KubeAPIServer: env.Get(EnvKubeVersion), Etcd: env.Get(EnvEtcdVersion)}.Normalize()
}

// OptionsIn are the options env sets (EnvAssets, EnvCacheDir,
// EnvKubeReleases), progress to p.
func OptionsIn(env cluster.Env) Options {
	return Options{AssetsDir: env.Get(EnvAssets), CacheDir: env.Get(EnvCacheDir), KubeReleases: env.Get(EnvKubeReleases)}
}
