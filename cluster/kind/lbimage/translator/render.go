package translator

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// Timeouts Envoy applies where kind's configuration names none, so haproxy
// keeps connections as long as Envoy would.
const (
	// TCPIdleTimeout is the TCP proxy's idle timeout, Envoy's default
	// (tcp_proxy.proto idle_timeout: 1 hour): a quiet watch through the
	// load balancer is not cut.
	TCPIdleTimeout = time.Hour
	// MaxConn bounds haproxy's connections; without it haproxy sizes its
	// tables from the container's file limit (a million on Docker).
	MaxConn = 4096
)

// Render returns the haproxy.cfg equivalent to the listeners and clusters,
// with the bootstrap's admin address serving haproxy's statistics (/stats)
// and /ready, so the configuration has a listener before kind writes its
// files. A listener's TCP proxy becomes a frontend, its cluster a backend:
// the same endpoints, balance and health checks. Differences from Envoy,
// all in the direction of fewer failed connections: haproxy sends traffic
// only to endpoints whose check passed, where Envoy with fewer than half
// healthy sends to all (its panic threshold); and a connection refused by
// one endpoint is retried on another (retries, option redispatch).
func Render(b Bootstrap, listeners []Listener, clusters []Cluster) (string, error) {
	var w strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&w, format+"\n", args...) }
	p("# haproxy configuration rendered by the informer-conformance load balancer")
	p("# image's envoy (a translator, not Envoy) from kind's Envoy configuration:")
	p("# listeners %s, clusters %s.", b.DynamicResources.LDSConfig.PathConfigSource.Path, b.DynamicResources.CDSConfig.PathConfigSource.Path)
	if b.Node.Cluster != "" || b.Node.ID != "" {
		p("# kind cluster %s, node %s.", b.Node.Cluster, b.Node.ID)
	}
	p("global")
	p("    log stdout format raw daemon")
	p("    maxconn %d", MaxConn)
	p("")
	p("defaults")
	p("    mode tcp")
	p("    log global")
	p("    option dontlognull")
	p("    timeout connect 5s")
	p("    timeout client %s", hap(TCPIdleTimeout))
	p("    timeout server %s", hap(TCPIdleTimeout))
	p("    retries 3")
	p("    option redispatch")

	byName := map[string]Cluster{}
	dns := false
	for _, c := range clusters {
		if _, dup := byName[c.Name]; dup {
			return "", fmt.Errorf("cluster %q is defined twice", c.Name)
		}
		byName[c.Name] = c
		dns = dns || isDNS(c.DiscoveryType)
	}
	if dns {
		// STRICT_DNS: endpoint names are resolved again while haproxy runs,
		// through the container's resolver (Docker's embedded DNS on kind's
		// network).
		p("")
		p("resolvers dns")
		p("    parse-resolv-conf")
		p("    hold valid 10s")
	}

	if a := b.Admin.Address; a.SocketAddress.PortValue != 0 {
		p("")
		p("listen admin")
		p("    mode http")
		p("    bind %s", bindAddr(a))
		p("    timeout client 30s")
		p("    http-request return status 200 content-type text/plain string LIVE if { path /ready }")
		p("    stats enable")
		p("    stats uri /stats")
	}

	used := map[string]bool{}
	for _, l := range listeners {
		cluster, err := proxiedCluster(l)
		if err != nil {
			return "", err
		}
		if _, ok := byName[cluster]; !ok {
			return "", fmt.Errorf("listener %q proxies to cluster %q, which the clusters file does not define", l.Name, cluster)
		}
		used[cluster] = true
		p("")
		p("frontend %s", l.Name)
		p("    bind %s", bindAddr(l.Address))
		p("    default_backend %s", cluster)
	}

	for _, name := range slices.Sorted(maps.Keys(byName)) {
		if err := renderCluster(p, byName[name]); err != nil {
			return "", err
		}
	}
	return w.String(), nil
}

// proxiedCluster is the cluster a listener's only filter, a TCP proxy, sends to.
func proxiedCluster(l Listener) (string, error) {
	if len(l.FilterChains) != 1 || len(l.FilterChains[0].Filters) != 1 {
		return "", fmt.Errorf("listener %q: want one filter chain of one filter (a TCP proxy)", l.Name)
	}
	f := l.FilterChains[0].Filters[0]
	if f.Name != tcpProxy {
		return "", fmt.Errorf("listener %q: filter %q, only %s is supported", l.Name, f.Name, tcpProxy)
	}
	if f.TypedConfig.Cluster == "" {
		return "", fmt.Errorf("listener %q: the TCP proxy names no cluster", l.Name)
	}
	return f.TypedConfig.Cluster, nil
}

func isDNS(discovery string) bool { return discovery == "STRICT_DNS" || discovery == "LOGICAL_DNS" }

var balance = map[string]string{"": "roundrobin", "ROUND_ROBIN": "roundrobin", "LEAST_REQUEST": "leastconn", "RANDOM": "random"}

// resolvePrefer maps Envoy's dns_lookup_family to haproxy's resolve-prefer
// (AUTO: IPv6 first, then IPv4; haproxy's ipv6 preference falls back the
// same way).
var resolvePrefer = map[string]string{"": "ipv4", "V4_ONLY": "ipv4", "V4_PREFERRED": "ipv4", "AUTO": "ipv6", "V6_ONLY": "ipv6"}

func renderCluster(p func(string, ...any), c Cluster) error {
	policy, ok := balance[c.LBPolicy]
	if !ok {
		return fmt.Errorf("cluster %q: lb_policy %q is not supported", c.Name, c.LBPolicy)
	}
	if c.DiscoveryType != "STATIC" && !isDNS(c.DiscoveryType) {
		return fmt.Errorf("cluster %q: type %q is not supported (STATIC, STRICT_DNS, LOGICAL_DNS)", c.Name, c.DiscoveryType)
	}
	prefer, ok := resolvePrefer[c.DNSLookupFamily]
	if !ok {
		return fmt.Errorf("cluster %q: dns_lookup_family %q is not supported", c.Name, c.DNSLookupFamily)
	}
	p("")
	p("backend %s", c.Name)
	p("    balance %s", policy)
	if c.ConnectTimeout != "" {
		d, err := duration(c.ConnectTimeout)
		if err != nil {
			return fmt.Errorf("cluster %q connect_timeout: %w", c.Name, err)
		}
		p("    timeout connect %s", hap(d))
	}
	server := ""
	switch len(c.HealthChecks) {
	case 0:
	case 1:
		hc := c.HealthChecks[0]
		s, err := healthCheck(p, c, hc)
		if err != nil {
			return fmt.Errorf("cluster %q health check: %w", c.Name, err)
		}
		server = s
	default:
		return fmt.Errorf("cluster %q: %d health checks, at most one is supported", c.Name, len(c.HealthChecks))
	}
	if isDNS(c.DiscoveryType) {
		server += " resolvers dns resolve-prefer " + prefer + " init-addr last,libc,none"
	}
	if server != "" {
		p("    default-server%s", server)
	}
	if c.LoadAssignment.ClusterName != "" && c.LoadAssignment.ClusterName != c.Name {
		return fmt.Errorf("cluster %q: load_assignment names cluster %q", c.Name, c.LoadAssignment.ClusterName)
	}
	for _, e := range c.LoadAssignment.Endpoints {
		for _, le := range e.LBEndpoints {
			a := le.Endpoint.Address
			if a.SocketAddress.Address == "" || a.SocketAddress.PortValue == 0 {
				return fmt.Errorf("cluster %q: an endpoint has no address and port", c.Name)
			}
			hp := a.hostPort()
			p("    server %s %s", strings.Trim(strings.ReplaceAll(hp, "]:", ":"), "["), hp)
		}
	}
	return nil
}

// healthCheck writes the backend's check directives and returns the
// default-server options that turn the check on.
func healthCheck(p func(string, ...any), c Cluster, hc HealthCheck) (string, error) {
	if hc.HTTPHealthCheck == nil || hc.HTTPHealthCheck.Path == "" {
		return "", fmt.Errorf("only HTTP health checks with a path are supported")
	}
	var d [3]time.Duration
	for i, s := range []string{hc.Timeout, hc.Interval, hc.InitialJitter} {
		if s == "" {
			continue
		}
		v, err := duration(s)
		if err != nil {
			return "", err
		}
		d[i] = v
	}
	timeout, interval := d[0], d[1]
	if interval <= 0 {
		return "", fmt.Errorf("no interval")
	}
	tls := ""
	if len(hc.TransportSocketMatchCriteria) > 0 {
		var ok bool
		for _, m := range c.TransportSocketMatches {
			if !maps.Equal(m.Match, hc.TransportSocketMatchCriteria) {
				continue
			}
			if m.TransportSocket.Name != tlsSocket {
				return "", fmt.Errorf("transport socket %q is not supported (only %s)", m.TransportSocket.Name, tlsSocket)
			}
			if v := m.TransportSocket.TypedConfig.CommonTLSContext.ValidationContext.TrustChainVerification; v != "ACCEPT_UNTRUSTED" {
				// With no trusted CA given, a verifying check could never pass.
				return "", fmt.Errorf("TLS with trust_chain_verification %q is not supported (only ACCEPT_UNTRUSTED)", v)
			}
			tls, ok = " check-ssl verify none", true
		}
		if !ok {
			return "", fmt.Errorf("no transport_socket_matches entry matches %v", hc.TransportSocketMatchCriteria)
		}
	}
	p("    option httpchk")
	// Envoy's HTTP check: HTTP/1.1, Host the cluster's name, any 2xx is healthy.
	p("    http-check send meth GET uri %s ver HTTP/1.1 hdr Host %s", hc.HTTPHealthCheck.Path, c.Name)
	p("    http-check expect rstatus ^2[0-9][0-9]$")
	if timeout > 0 {
		p("    timeout check %s", hap(timeout))
	}
	if hc.AlwaysLogHealthCheckFailures || hc.AlwaysLogHealthCheckSuccess {
		// haproxy logs changes of a server's state, to the global log (stdout).
		p("    option log-health-checks")
	}
	fall, rise := max(hc.UnhealthyThreshold, 1), max(hc.HealthyThreshold, 1)
	return fmt.Sprintf(" check%s inter %s fall %d rise %d", tls, hap(interval), fall, rise), nil
}

// bindAddr is a socket address in haproxy's bind syntax; Envoy's "::"
// listens on IPv4 too.
func bindAddr(a Address) string {
	host := a.SocketAddress.Address
	if strings.Contains(host, ":") {
		s := fmt.Sprintf("%s:%d", host, a.SocketAddress.PortValue)
		if host == "::" {
			s += " v4v6"
		}
		return s
	}
	return fmt.Sprintf("%s:%d", host, a.SocketAddress.PortValue)
}

// hap is a duration in haproxy's time format (milliseconds unless whole
// seconds, minutes or hours).
func hap(d time.Duration) string {
	switch {
	case d%time.Hour == 0 && d > 0:
		return fmt.Sprintf("%dh", d/time.Hour)
	case d%time.Minute == 0 && d > 0:
		return fmt.Sprintf("%dm", d/time.Minute)
	case d%time.Second == 0:
		return fmt.Sprintf("%ds", d/time.Second)
	}
	return fmt.Sprintf("%dms", d.Milliseconds())
}
