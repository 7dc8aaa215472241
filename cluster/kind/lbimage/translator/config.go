// Package translator is the "envoy" of the load balancer image the kind
// backend builds offline (cluster/kind/lbimage): it reads the Envoy
// configuration kind writes into its load balancer container (a bootstrap
// file naming a listener file and a cluster file, file-based xDS), renders
// an equivalent haproxy.cfg and runs haproxy, reloading it (haproxy -sf)
// when kind replaces the files.
//
// Only what kind's templates use is understood (kind v0.33
// pkg/cluster/internal/loadbalancer/config.go: DynamicFilesystemConfigTemplate,
// ProxyLDSConfigTemplate, ProxyCDSConfigTemplate): one TCP proxy listener, a
// cluster of DNS-named endpoints balanced round robin and health-checked with
// GET /healthz over TLS whose certificate is not verified. Decoding is
// strict: a field this package does not know fails the rendering (and the
// unit test that renders kind's own templates), instead of being ignored.
package translator

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"sigs.k8s.io/yaml"
)

// Bootstrap is the part of Envoy's bootstrap configuration kind writes
// (DynamicFilesystemConfigTemplate).
type Bootstrap struct {
	Node struct {
		Cluster string `json:"cluster"`
		ID      string `json:"id"`
	} `json:"node"`
	DynamicResources struct {
		CDSConfig ConfigSource `json:"cds_config"`
		LDSConfig ConfigSource `json:"lds_config"`
	} `json:"dynamic_resources"`
	Admin struct {
		AccessLogPath string  `json:"access_log_path"`
		Address       Address `json:"address"`
	} `json:"admin"`
}

// ConfigSource names the file a resource type is read from.
type ConfigSource struct {
	ResourceAPIVersion string `json:"resource_api_version"`
	PathConfigSource   struct {
		Path string `json:"path"`
	} `json:"path_config_source"`
}

// Address is Envoy's core.v3.Address (socket addresses only).
type Address struct {
	SocketAddress struct {
		Address   string `json:"address"`
		PortValue int    `json:"port_value"`
	} `json:"socket_address"`
}

// hostPort is the address as host:port, IPv6 hosts bracketed.
func (a Address) hostPort() string {
	return net.JoinHostPort(a.SocketAddress.Address, strconv.Itoa(a.SocketAddress.PortValue))
}

// ParseBootstrap reads a bootstrap file's contents.
func ParseBootstrap(data []byte) (Bootstrap, error) {
	var b Bootstrap
	if err := yaml.UnmarshalStrict(data, &b); err != nil {
		return b, fmt.Errorf("envoy bootstrap: %w", err)
	}
	if b.DynamicResources.CDSConfig.PathConfigSource.Path == "" || b.DynamicResources.LDSConfig.PathConfigSource.Path == "" {
		return b, fmt.Errorf("envoy bootstrap names no cds_config and lds_config path_config_source (only file-based xDS is supported)")
	}
	return b, nil
}

// Listener is Envoy's listener.v3.Listener as ProxyLDSConfigTemplate writes it.
type Listener struct {
	Type         string  `json:"@type"`
	Name         string  `json:"name"`
	Address      Address `json:"address"`
	FilterChains []struct {
		Filters []struct {
			Name        string `json:"name"`
			TypedConfig struct {
				Type       string `json:"@type"`
				StatPrefix string `json:"stat_prefix"`
				Cluster    string `json:"cluster"`
			} `json:"typed_config"`
		} `json:"filters"`
	} `json:"filter_chains"`
}

// Cluster is Envoy's cluster.v3.Cluster as ProxyCDSConfigTemplate writes it.
type Cluster struct {
	Type            string        `json:"@type"`
	Name            string        `json:"name"`
	ConnectTimeout  string        `json:"connect_timeout"`
	DiscoveryType   string        `json:"type"`
	LBPolicy        string        `json:"lb_policy"`
	DNSLookupFamily string        `json:"dns_lookup_family"`
	HealthChecks    []HealthCheck `json:"health_checks"`
	// TransportSocketMatches select, by match criteria, how to connect:
	// a health check names its criteria; traffic to endpoints without
	// metadata matches none and goes as plain TCP (TLS passes through).
	TransportSocketMatches []struct {
		Name            string            `json:"name"`
		Match           map[string]string `json:"match"`
		TransportSocket struct {
			Name        string `json:"name"`
			TypedConfig struct {
				Type             string `json:"@type"`
				CommonTLSContext struct {
					ValidationContext struct {
						TrustChainVerification string `json:"trust_chain_verification"`
					} `json:"validation_context"`
				} `json:"common_tls_context"`
			} `json:"typed_config"`
		} `json:"transport_socket"`
	} `json:"transport_socket_matches"`
	LoadAssignment struct {
		ClusterName string `json:"cluster_name"`
		Endpoints   []struct {
			LBEndpoints []struct {
				Endpoint struct {
					Address Address `json:"address"`
				} `json:"endpoint"`
			} `json:"lb_endpoints"`
		} `json:"endpoints"`
	} `json:"load_assignment"`
}

// HealthCheck is Envoy's core.v3.HealthCheck (HTTP checks only).
type HealthCheck struct {
	Timeout                      string `json:"timeout"`
	Interval                     string `json:"interval"`
	UnhealthyThreshold           int    `json:"unhealthy_threshold"`
	HealthyThreshold             int    `json:"healthy_threshold"`
	InitialJitter                string `json:"initial_jitter"`
	NoTrafficInterval            string `json:"no_traffic_interval"`
	AlwaysLogHealthCheckFailures bool   `json:"always_log_health_check_failures"`
	AlwaysLogHealthCheckSuccess  bool   `json:"always_log_health_check_success"`
	EventLogPath                 string `json:"event_log_path"`
	HTTPHealthCheck              *struct {
		Path string `json:"path"`
	} `json:"http_health_check"`
	TransportSocketMatchCriteria map[string]string `json:"transport_socket_match_criteria"`
}

const (
	listenerType = "type.googleapis.com/envoy.config.listener.v3.Listener"
	clusterType  = "type.googleapis.com/envoy.config.cluster.v3.Cluster"
	tcpProxy     = "envoy.filters.network.tcp_proxy"
	tlsSocket    = "envoy.transport_sockets.tls"
)

// resources is an xDS file: a list of typed resources.
type resources[T any] struct {
	Resources []T `json:"resources"`
}

// ParseListeners reads an LDS file (kind's lds.yaml).
func ParseListeners(data []byte) ([]Listener, error) {
	var r resources[Listener]
	if err := yaml.UnmarshalStrict(data, &r); err != nil {
		return nil, fmt.Errorf("listeners: %w", err)
	}
	for _, l := range r.Resources {
		if l.Type != listenerType {
			return nil, fmt.Errorf("listener %q: @type %q, want %q", l.Name, l.Type, listenerType)
		}
	}
	return r.Resources, nil
}

// ParseClusters reads a CDS file (kind's cds.yaml).
func ParseClusters(data []byte) ([]Cluster, error) {
	var r resources[Cluster]
	if err := yaml.UnmarshalStrict(data, &r); err != nil {
		return nil, fmt.Errorf("clusters: %w", err)
	}
	for _, c := range r.Resources {
		if c.Type != clusterType {
			return nil, fmt.Errorf("cluster %q: @type %q, want %q", c.Name, c.Type, clusterType)
		}
	}
	return r.Resources, nil
}

// duration parses a protobuf JSON Duration ("0.25s").
func duration(s string) (time.Duration, error) {
	v, ok := strings.CutSuffix(s, "s")
	if !ok {
		return 0, fmt.Errorf("duration %q does not end in s", s)
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f < 0 {
		return 0, fmt.Errorf("duration %q: not a number of seconds", s)
	}
	return time.Duration(f * float64(time.Second)), nil
}
