// Package nodeid names a probed Redis node the same way in every package
// that keeps state per node: the engine's services, the collectors,
// attribution and the status page.
package nodeid

// ID is a node: the configured target it belongs to and, for a Cluster
// shard or a Sentinel primary, its address (empty for a single server),
// as the target and node labels say. It is comparable: a map key.
type ID struct {
	Target, Node string
}

// String is how a log line names the node: its target, and its address in
// a Cluster or Sentinel target.
func (id ID) String() string {
	if id.Node == "" {
		return id.Target
	}
	return id.Target + "/" + id.Node
}
