package host

// supported: Linux has /proc and /sys.
func supported() error { return nil }
