package host

// Paths are the roots of the proc and sys file systems, so a container can
// read the host's (mounted at /host/proc, say) and tests can read fixtures.
// They come from the --path.procfs and --path.sysfs flags.
type Paths struct {
	ProcFS string
	SysFS  string
}

// DefaultPaths are the host's own /proc and /sys.
func DefaultPaths() Paths { return Paths{ProcFS: "/proc", SysFS: "/sys"} }

// Host returns the reader over these roots: the one reader of /proc and
// /sys that the collectors, the change watcher, explain and the burst
// report's environment snapshot share.
func (p Paths) Host() Reader { return New(p.ProcFS, p.SysFS) }
