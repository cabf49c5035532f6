package histogram

// Slot returns the slot Add counts a duration of ns nanoseconds in.
func Slot(ns int64) int {
	var l Local
	l.Add(ns, 1)
	return l.lo
}
