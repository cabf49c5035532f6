package dispatch

// A list grows itself: once every drain function it was granted has
// started a task and tasks wait unstarted, it arms a check on
// Config.After, which runs every GrowInterval while growing can help and
// asks for more drain functions while those it has are held by slow
// tasks: a slot for each while slots are free, a place in the queue for
// the rest (slot.go). The check runs on a goroutine of its own, so nothing
// the dispatching goroutine does (a slow Cancelled hook, a fake clock that
// stands still) holds up growth. It is not armed while a drain function
// waits for a slot, the executor or a processor: that one, once it starts
// a task, arms it; nor once the list has as many drain functions as the
// executor's size, or every task has started: then nothing a check could
// do would change anything.

// watch arms the list's check, unless one is armed or growing cannot
// help. The caller has just started a drain function's first task, or
// fewer drain functions than it counted.
func (l *list[T]) watch() {
	if !l.mayGrow() || !l.watching.CompareAndSwap(false, true) {
		return
	}
	// Whoever holds watching owns check and startedAtCheck.
	if l.check == nil {
		l.check = l.grow
	}
	l.startedAtCheck = int64(len(l.tasks)) - l.unstarted()
	l.d.cfg.After(GrowInterval, l.check)
}

// mayGrow reports whether more drain functions could start tasks: some
// tasks have not started, the list has fewer drain functions than the
// executor's size, and every one of them has started a task, none waiting
// for a slot, the executor or a processor.
func (l *list[T]) mayGrow() bool {
	drainers := l.drainers.Load()
	return drainers < int64(l.d.cfg.Parallelism) && l.working.Load() >= drainers && l.unstarted() > 0
}

// grow is the check: it asks for drain functions if fewer tasks started
// since the last check than the list has drain functions, which are then
// held by slow tasks. Drain functions that keep starting short tasks gain
// nothing from company. Then it arms the next check, if growing can still
// help.
func (l *list[T]) grow() {
	defer l.rearm() // also if an Execute ends this goroutine with runtime.Goexit
	if unstarted := l.unstarted(); unstarted > 0 && l.mayGrow() {
		drainers := l.drainers.Load()
		started := int64(len(l.tasks)) - unstarted
		if started-l.startedAtCheck < drainers {
			l.start(int(min(moreDrainers(drainers, started, unstarted), int64(l.d.cfg.Parallelism)-drainers, unstarted)))
		}
	}
}

// rearm ends a check and arms the next if growing can still help. It lets
// go of watching before it looks: a drain function that started meanwhile
// found watching held and left the arming to the check.
func (l *list[T]) rearm() {
	l.watching.Store(false)
	l.watch()
}

// moreDrainers returns how many drain functions to add to a list whose
// drainers, every one started, are held by slow tasks: one for each slow
// task expected among the unstarted ones, at the rate seen among those
// started, and as many again as it has, for the short ones. So a list
// grows in one step, not by doubling once per GrowInterval.
func moreDrainers(drainers, started, unstarted int64) int64 {
	if started <= 0 {
		return drainers
	}
	return (drainers*unstarted+started-1)/started + drainers
}
