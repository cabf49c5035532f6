// Copyright 2014 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.
//
// Adapted for wheeltimer from the context package's tests (x_test.go,
// context_test.go and afterfunc_test.go in Go's src/context): the contexts
// with deadlines are a HashedWheelTimer's, and the checks of the package's
// unexported linkage check the wheel context's own registrations instead.
// The Go license text is in NOTICE.

package hashedwheel

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The tests named TestStdlib… are the context package's, run against the
// wheel's WithTimeout and WithDeadline. Each TestStdlibDifference… shows
// one known difference from the package's contexts, which the README's
// section on contexts names.

// otherContext is a Context that's not one of the types defined in
// context.go or here. This lets us test code paths that differ based on
// the underlying type of the Context.
type otherContext struct {
	context.Context
}

const (
	shortDuration    = 1 * time.Millisecond // a reasonable duration to block in a test
	veryLongDuration = 1000 * time.Hour     // an arbitrary upper bound on the test's running time
	quiescent        = 5 * time.Second      // by which remaining work is done, on a loaded machine
)

// stdlibTimer is the timer of the ported tests: a real clock, as the
// package's tests use, and a 1ms tick.
func stdlibTimer(t *testing.T) *HashedWheelTimer { return contextTimer(t) }

// registered returns the number of functions that contexts derived from
// the wheel context c registered with it: its children, as the package's
// tests count a cancelCtx's.
func registered(c context.Context) int {
	w, ok := c.(*wheelContext)
	if !ok {
		panic(fmt.Sprintf("not a wheel context: %T", c))
	}
	x := w.extras.Load()
	if x == nil {
		return 0
	}
	return x.registered()
}

func TestStdlibWithCancel(t *testing.T) {
	h := stdlibTimer(t)
	c1, cancel := h.WithTimeout(context.Background(), veryLongDuration)

	if got, prefix := fmt.Sprint(c1), "context.Background.WithDeadline("; !strings.HasPrefix(got, prefix) {
		t.Errorf("c1.String() = %q want prefix %q", got, prefix)
	}

	o := otherContext{c1}
	c2, cancel2 := context.WithCancel(c1)
	defer cancel2()
	contexts := []context.Context{c1, o, c2}

	for i, c := range contexts {
		if d := c.Done(); d == nil {
			t.Errorf("c[%d].Done() == %v want non-nil", i, d)
		}
		if e := c.Err(); e != nil {
			t.Errorf("c[%d].Err() == %v want nil", i, e)
		}

		select {
		case x := <-c.Done():
			t.Errorf("<-c.Done() == %v want nothing (it should block)", x)
		default:
		}
	}

	cancel() // Should propagate synchronously.
	for i, c := range contexts {
		select {
		case <-c.Done():
		default:
			t.Errorf("<-c[%d].Done() blocked, but shouldn't have", i)
		}
		if e := c.Err(); e != context.Canceled {
			t.Errorf("c[%d].Err() == %v want %v", i, e, context.Canceled)
		}
	}
}

func TestStdlibParentFinishesChild(t *testing.T) {
	h := stdlibTimer(t)
	// Context tree:
	// parent -> cancelChild
	// parent -> timerChild (the context package's)
	// parent -> wheelChild
	// parent -> afterChild
	parent, cancel := h.WithTimeout(context.Background(), veryLongDuration)
	cancelChild, stop := context.WithCancel(parent)
	defer stop()
	timerChild, stop := context.WithTimeout(parent, veryLongDuration)
	defer stop()
	wheelChild, stop := h.WithTimeout(parent, veryLongDuration-time.Hour)
	defer stop()
	afterStop := context.AfterFunc(parent, func() {})
	defer afterStop()

	select {
	case x := <-parent.Done():
		t.Errorf("<-parent.Done() == %v want nothing (it should block)", x)
	case x := <-cancelChild.Done():
		t.Errorf("<-cancelChild.Done() == %v want nothing (it should block)", x)
	case x := <-timerChild.Done():
		t.Errorf("<-timerChild.Done() == %v want nothing (it should block)", x)
	case x := <-wheelChild.Done():
		t.Errorf("<-wheelChild.Done() == %v want nothing (it should block)", x)
	default:
	}

	// The parent's registrations are the four children.
	assert.Equal(t, 4, registered(parent), "bad linkage")

	cancel()

	assert.Equal(t, 0, registered(parent), "the parent's cancel didn't clear its registrations")

	// parent and children should all be finished.
	check := func(ctx context.Context, name string) {
		select {
		case <-ctx.Done():
		default:
			t.Errorf("<-%s.Done() blocked, but shouldn't have", name)
		}
		if e := ctx.Err(); e != context.Canceled {
			t.Errorf("%s.Err() == %v want %v", name, e, context.Canceled)
		}
	}
	check(parent, "parent")
	check(cancelChild, "cancelChild")
	check(timerChild, "timerChild")
	check(wheelChild, "wheelChild")

	// WithValue should return a canceled context on a canceled parent.
	precanceledChild := context.WithValue(parent, ctxKey("key"), "value")
	select {
	case <-precanceledChild.Done():
	default:
		t.Errorf("<-precanceledChild.Done() blocked, but shouldn't have")
	}
	if e := precanceledChild.Err(); e != context.Canceled {
		t.Errorf("precanceledChild.Err() == %v want %v", e, context.Canceled)
	}
}

func TestStdlibChildFinishesFirst(t *testing.T) {
	h := stdlibTimer(t)
	cancelable, stop := context.WithCancel(context.Background())
	defer stop()
	for _, grandparent := range []context.Context{context.Background(), cancelable} {
		parent, cancelParent := h.WithTimeout(grandparent, veryLongDuration)
		child, cancel := context.WithCancel(parent)

		select {
		case x := <-parent.Done():
			t.Errorf("<-parent.Done() == %v want nothing (it should block)", x)
		case x := <-child.Done():
			t.Errorf("<-child.Done() == %v want nothing (it should block)", x)
		default:
		}

		assert.Equal(t, 1, registered(parent), "bad linkage")

		cancel()

		assert.Equal(t, 0, registered(parent), "child's cancel didn't remove its registration")

		// child should be finished.
		select {
		case <-child.Done():
		default:
			t.Errorf("<-child.Done() blocked, but shouldn't have")
		}
		if e := child.Err(); e != context.Canceled {
			t.Errorf("child.Err() == %v want %v", e, context.Canceled)
		}

		// parent should not be finished.
		select {
		case x := <-parent.Done():
			t.Errorf("<-parent.Done() == %v want nothing (it should block)", x)
		default:
		}
		if e := parent.Err(); e != nil {
			t.Errorf("parent.Err() == %v want nil", e)
		}
		cancelParent()
	}
}

func TestStdlibCancelRemoves(t *testing.T) {
	h := stdlibTimer(t)
	checkChildren := func(when string, ctx context.Context, want int) {
		if got := registered(ctx); got != want {
			t.Errorf("%s: context has %d children, want %d", when, got, want)
		}
	}

	ctx, cancelCtx := h.WithTimeout(context.Background(), veryLongDuration)
	defer cancelCtx()
	checkChildren("after creation", ctx, 0)
	_, cancel := context.WithCancel(ctx)
	checkChildren("with WithCancel child ", ctx, 1)
	cancel()
	checkChildren("after canceling WithCancel child", ctx, 0)

	_, cancel = context.WithTimeout(ctx, 60*time.Minute)
	checkChildren("with WithTimeout child ", ctx, 1)
	cancel()
	checkChildren("after canceling WithTimeout child", ctx, 0)

	_, cancel = h.WithTimeout(ctx, 60*time.Minute)
	checkChildren("with wheel WithTimeout child ", ctx, 1)
	cancel()
	checkChildren("after canceling wheel WithTimeout child", ctx, 0)

	stop := context.AfterFunc(ctx, func() {})
	checkChildren("with AfterFunc child ", ctx, 1)
	stop()
	checkChildren("after stopping AfterFunc child ", ctx, 0)
}

// goroutinesFor returns how many goroutines exist after derive has made n
// contexts that did not exist before; release then cancels them. It counts
// goroutines by identity, not the process's total, so goroutines of earlier
// tests that end meanwhile cannot hide the ones derive started.
func goroutinesFor(n int, derive func() context.CancelFunc) (started int, release func()) {
	cancels := make([]context.CancelFunc, 0, n)
	before := goroutineIDs()
	for range n {
		cancels = append(cancels, derive())
	}
	started = countNew(before, goroutineIDs())
	return started, func() {
		for _, cancel := range cancels {
			cancel()
		}
		// Let the goroutines they had end, so that the next count starts
		// without them.
		for end := time.Now().Add(quiescent); time.Now().Before(end); time.Sleep(time.Millisecond) {
			if countNew(before, goroutineIDs()) == 0 {
				return
			}
		}
	}
}

// countNew counts the goroutines in now that are not in before.
func countNew(before, now map[string]bool) int {
	count := 0
	for id := range now {
		if !before[id] {
			count++
		}
	}
	return count
}

// goroutineIDs returns the identities of the goroutines that exist, read
// from the "goroutine N [" header of each in a dump of all stacks.
func goroutineIDs() map[string]bool {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	ids := make(map[string]bool)
	for _, block := range strings.Split(string(buf), "\n\n") {
		if rest, ok := strings.CutPrefix(block, "goroutine "); ok {
			if id, _, ok := strings.Cut(rest, " "); ok {
				ids[id] = true
			}
		}
	}
	return ids
}

// TestStdlibCustomContextGoroutines: contexts derived directly from a wheel
// context, and from those, start no goroutine. The package's test counts
// the goroutines it starts; this one counts the goroutines that exist, for
// 100 contexts of each kind, and allows half as many for other goroutines
// of the process.
func TestStdlibCustomContextGoroutines(t *testing.T) {
	h := stdlibTimer(t)
	const n = 100
	checkNoGoroutine := func(what string, make func() context.CancelFunc) {
		t.Helper()
		started, release := goroutinesFor(n, make)
		defer release()
		if started >= n/2 {
			t.Errorf("%s: %d goroutines for %d contexts", what, started, n)
		}
	}

	ctx1, cancel1 := h.WithTimeout(context.Background(), veryLongDuration)
	defer cancel1()
	checkNoGoroutine("wheel WithTimeout", func() context.CancelFunc {
		_, cancel := h.WithTimeout(context.Background(), veryLongDuration)
		return cancel
	})

	ctx3, cancel3 := context.WithCancel(ctx1)
	defer cancel3()
	checkNoGoroutine("WithCancel of a wheel context", func() context.CancelFunc {
		_, cancel := context.WithCancel(ctx1)
		return cancel
	})

	ctx4, cancel4 := context.WithTimeout(ctx3, veryLongDuration)
	defer cancel4()
	checkNoGoroutine("WithTimeout of its child", func() context.CancelFunc {
		_, cancel := context.WithTimeout(ctx3, veryLongDuration)
		return cancel
	})

	ctx5, cancel5 := h.WithTimeout(ctx4, veryLongDuration/2)
	defer cancel5()
	checkNoGoroutine("wheel WithTimeout of a wheel context", func() context.CancelFunc {
		_, cancel := h.WithTimeout(ctx1, veryLongDuration/2)
		return cancel
	})

	cancel5()
	checkNoGoroutine("WithCancel of a cancelled wheel context", func() context.CancelFunc {
		_, cancel := context.WithCancel(ctx5)
		return cancel
	})

	// Check applied to canceled context.
	cancel1()
	checkNoGoroutine("WithTimeout of a cancelled wheel context", func() context.CancelFunc {
		_, cancel := h.WithTimeout(ctx1, veryLongDuration)
		return cancel
	})
}

func testDeadline(c context.Context, name string, t *testing.T) {
	t.Helper()
	timer := time.NewTimer(quiescent)
	defer timer.Stop()
	select {
	case <-timer.C:
		t.Fatalf("%s: context not timed out after %v", name, quiescent)
	case <-c.Done():
	}
	if e := c.Err(); e != context.DeadlineExceeded {
		t.Errorf("%s: c.Err() == %v; want %v", name, e, context.DeadlineExceeded)
	}
}

func TestStdlibDeadline(t *testing.T) {
	t.Parallel()
	h := stdlibTimer(t)

	c, cancel := h.WithDeadline(context.Background(), time.Now().Add(shortDuration))
	defer cancel()
	if got, prefix := fmt.Sprint(c), "context.Background.WithDeadline("; !strings.HasPrefix(got, prefix) {
		t.Errorf("c.String() = %q want prefix %q", got, prefix)
	}
	testDeadline(c, "WithDeadline", t)

	c, cancel = h.WithDeadline(context.Background(), time.Now().Add(shortDuration))
	defer cancel()
	o := otherContext{c}
	testDeadline(o, "WithDeadline+otherContext", t)

	c, cancel = h.WithDeadline(context.Background(), time.Now().Add(shortDuration))
	defer cancel()
	o = otherContext{c}
	c, cancel = h.WithDeadline(o, time.Now().Add(veryLongDuration))
	defer cancel()
	testDeadline(c, "WithDeadline+otherContext+WithDeadline", t)

	c, cancel = h.WithDeadline(context.Background(), time.Now().Add(-shortDuration))
	defer cancel()
	testDeadline(c, "WithDeadline+inthepast", t)

	c, cancel = h.WithDeadline(context.Background(), time.Now())
	defer cancel()
	testDeadline(c, "WithDeadline+now", t)
}

func TestStdlibTimeout(t *testing.T) {
	t.Parallel()
	h := stdlibTimer(t)

	c, cancel := h.WithTimeout(context.Background(), shortDuration)
	defer cancel()
	if got, prefix := fmt.Sprint(c), "context.Background.WithDeadline("; !strings.HasPrefix(got, prefix) {
		t.Errorf("c.String() = %q want prefix %q", got, prefix)
	}
	testDeadline(c, "WithTimeout", t)

	c, cancel = h.WithTimeout(context.Background(), shortDuration)
	defer cancel()
	o := otherContext{c}
	testDeadline(o, "WithTimeout+otherContext", t)

	c, cancel = h.WithTimeout(context.Background(), shortDuration)
	defer cancel()
	o = otherContext{c}
	c, cancel = h.WithTimeout(o, veryLongDuration)
	defer cancel()
	testDeadline(c, "WithTimeout+otherContext+WithTimeout", t)
}

func TestStdlibCanceledTimeout(t *testing.T) {
	h := stdlibTimer(t)
	c, cancelOuter := h.WithTimeout(context.Background(), time.Second)
	defer cancelOuter()
	o := otherContext{c}
	c, cancel := h.WithTimeout(o, veryLongDuration)
	cancel() // Should propagate synchronously.
	select {
	case <-c.Done():
	default:
		t.Errorf("<-c.Done() blocked, but shouldn't have")
	}
	if e := c.Err(); e != context.Canceled {
		t.Errorf("c.Err() == %v want %v", e, context.Canceled)
	}
}

type key1 int
type key2 int

func (k key2) String() string { return fmt.Sprintf("%[1]T(%[1]d)", k) }

var k1 = key1(1)
var k2 = key2(1) // same int as k1, different type
var k3 = key2(3) // same type as k2, different int

func TestStdlibValues(t *testing.T) {
	h := stdlibTimer(t)
	check := func(c context.Context, nm, v1, v2, v3 string) {
		t.Helper()
		if v, ok := c.Value(k1).(string); ok == (len(v1) == 0) || v != v1 {
			t.Errorf(`%s.Value(k1).(string) = %q, %t want %q, %t`, nm, v, ok, v1, len(v1) != 0)
		}
		if v, ok := c.Value(k2).(string); ok == (len(v2) == 0) || v != v2 {
			t.Errorf(`%s.Value(k2).(string) = %q, %t want %q, %t`, nm, v, ok, v2, len(v2) != 0)
		}
		if v, ok := c.Value(k3).(string); ok == (len(v3) == 0) || v != v3 {
			t.Errorf(`%s.Value(k3).(string) = %q, %t want %q, %t`, nm, v, ok, v3, len(v3) != 0)
		}
	}

	c1 := context.WithValue(context.Background(), k1, "c1k1")
	w1, cancel1 := h.WithTimeout(c1, veryLongDuration)
	defer cancel1()
	check(w1, "w1", "c1k1", "", "")

	c2 := context.WithValue(w1, k2, "c2k2")
	check(c2, "c2", "c1k1", "c2k2", "")

	prefix := "context.Background.WithValue(hashedwheel.key1, c1k1).WithDeadline("
	suffix := "]).WithValue(hashedwheel.key2(1), c2k2)"
	if got := fmt.Sprint(c2); !strings.HasPrefix(got, prefix) || !strings.HasSuffix(got, suffix) {
		t.Errorf("c.String() = %q want %q…%q", got, prefix, suffix)
	}

	w2, cancel2 := h.WithTimeout(c2, veryLongDuration/2)
	defer cancel2()
	c3 := context.WithValue(w2, k3, "c3k3")
	check(c3, "c3", "c1k1", "c2k2", "c3k3")

	c4 := context.WithValue(c3, k1, nil)
	check(c4, "c4", "", "c2k2", "c3k3")

	o1 := otherContext{w1}
	check(o1, "o1", "c1k1", "", "")

	o2 := context.WithValue(o1, k2, "o2k2")
	check(o2, "o2", "c1k1", "o2k2", "")

	w3, cancel3 := h.WithTimeout(o2, veryLongDuration/3)
	defer cancel3()
	check(w3, "w3", "c1k1", "o2k2", "")

	o4 := context.WithValue(otherContext{c4}, k3, nil)
	check(o4, "o4", "", "c2k2", "")
}

func TestStdlibAllocs(t *testing.T) {
	h := stdlibTimer(t)
	bg := context.Background()
	for _, test := range []struct {
		desc  string
		f     func()
		limit float64
	}{
		{
			desc: "WithTimeout(bg, 1*time.Nanosecond)",
			f: func() {
				c, cancel := h.WithTimeout(bg, 1*time.Nanosecond)
				<-c.Done()
				cancel()
			},
			limit: 12,
		},
		{
			desc: "WithTimeout(bg, 5*time.Millisecond)",
			f: func() {
				c, cancel := h.WithTimeout(bg, 5*time.Millisecond)
				cancel()
				<-c.Done()
			},
			limit: 8,
		},
	} {
		if n := testing.AllocsPerRun(10, test.f); n > test.limit {
			t.Errorf("%s allocs = %f want %d", test.desc, n, int(test.limit))
		}
	}
}

// TestStdlibSimultaneousCancels builds the package's tree of contexts with
// every other level a wheel context, cancels them all at once and waits
// for every context to be done and every cancel function to return.
func TestStdlibSimultaneousCancels(t *testing.T) {
	h := stdlibTimer(t)
	root, cancel := h.WithTimeout(context.Background(), veryLongDuration)
	m := map[context.Context]context.CancelFunc{root: cancel}
	q := []context.Context{root}
	// Create a tree of contexts.
	for depth := time.Duration(1); len(q) != 0 && len(m) < 100; depth++ {
		parent := q[0]
		q = q[1:]
		for i := 0; i < 4; i++ {
			var ctx context.Context
			var cancel context.CancelFunc
			if i%2 == 0 {
				ctx, cancel = context.WithCancel(parent)
			} else {
				ctx, cancel = h.WithTimeout(parent, veryLongDuration-depth*time.Minute)
			}
			m[ctx] = cancel
			q = append(q, ctx)
		}
	}
	// Start all the cancels in a random order.
	var wg sync.WaitGroup
	wg.Add(len(m))
	for _, cancel := range m {
		go func(cancel context.CancelFunc) {
			cancel()
			wg.Done()
		}(cancel)
	}

	stuck := make(chan struct{})
	timer := time.AfterFunc(quiescent, func() { close(stuck) })
	defer timer.Stop()

	// Wait on all the contexts in a random order.
	for ctx := range m {
		select {
		case <-ctx.Done():
		case <-stuck:
			buf := make([]byte, 10<<10)
			n := runtime.Stack(buf, true)
			t.Fatalf("timed out after %v waiting for <-ctx.Done(); stacks:\n%s", quiescent, buf[:n])
		}
	}
	// Wait for all the cancel functions to return.
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-stuck:
		buf := make([]byte, 10<<10)
		n := runtime.Stack(buf, true)
		t.Fatalf("timed out after %v waiting for cancel functions; stacks:\n%s", quiescent, buf[:n])
	}
}

func TestStdlibInterlockedCancels(t *testing.T) {
	h := stdlibTimer(t)
	parent, cancelParent := h.WithTimeout(context.Background(), veryLongDuration)
	child, cancelChild := context.WithCancel(parent)
	go func() {
		<-parent.Done()
		cancelChild()
	}()
	cancelParent()
	timer := time.NewTimer(quiescent)
	defer timer.Stop()
	select {
	case <-child.Done():
	case <-timer.C:
		buf := make([]byte, 10<<10)
		n := runtime.Stack(buf, true)
		t.Fatalf("timed out after %v waiting for child.Done(); stacks:\n%s", quiescent, buf[:n])
	}
}

func TestStdlibLayersCancel(t *testing.T) {
	testLayers(t, time.Now().UnixNano(), false)
}

func TestStdlibLayersTimeout(t *testing.T) {
	testLayers(t, time.Now().UnixNano(), true)
}

// The kinds of layer of testLayers.
const (
	valueLayer = iota
	cancelLayer
	wheelLayer
)

// testLayers is the package's: random layers of WithValue, WithCancel and
// (here) the wheel's WithTimeout, then one cancel or the timeouts. A wheel
// layer's timeout is a little shorter than the one above it, so that it
// is a wheel context rather than the WithCancel that a later deadline
// gives. Where the package's cancellation reaches the innermost context
// before the cancel returns, so does this one, except across the two known
// differences (see synchronousBelow): there it must be done within
// quiescent.
func testLayers(t *testing.T, seed int64, testTimeout bool) {
	t.Parallel()
	h := stdlibTimer(t)

	r := rand.New(rand.NewSource(seed))
	prefix := fmt.Sprintf("seed=%d", seed)
	errorf := func(format string, a ...any) {
		t.Errorf(prefix+format, a...)
	}
	const (
		minLayers = 30
	)
	type value int
	var (
		vals      []*value
		cancels   []context.CancelFunc
		cancelAt  []int // the layer of each cancel
		kinds     []int
		numTimers int
		ctx       = context.Background()
	)
	for i := 0; i < minLayers || numTimers == 0 || len(cancels) == 0 || len(vals) == 0; i++ {
		switch r.Intn(3) {
		case 0:
			v := new(value)
			ctx = context.WithValue(ctx, v, v)
			vals = append(vals, v)
			kinds = append(kinds, valueLayer)
		case 1:
			var cancel context.CancelFunc
			ctx, cancel = context.WithCancel(ctx)
			cancels = append(cancels, cancel)
			cancelAt = append(cancelAt, i)
			kinds = append(kinds, cancelLayer)
		case 2:
			var cancel context.CancelFunc
			d := veryLongDuration - time.Duration(i)*time.Minute
			if testTimeout {
				d = shortDuration
			}
			ctx, cancel = h.WithTimeout(ctx, d)
			cancels = append(cancels, cancel)
			cancelAt = append(cancelAt, i)
			kind := cancelLayer // a parent's earlier deadline gives a WithCancel
			if _, ok := ctx.(*wheelContext); ok {
				kind = wheelLayer
			}
			kinds = append(kinds, kind)
			numTimers++
		}
	}
	defer func() {
		for _, cancel := range cancels {
			cancel()
		}
	}()
	checkValues := func(when string) {
		for _, key := range vals {
			if val := ctx.Value(key).(*value); key != val {
				errorf("%s: ctx.Value(%p) = %p want %p", when, key, val, key)
			}
		}
	}
	if !testTimeout {
		select {
		case <-ctx.Done():
			errorf("ctx should not be canceled yet")
		default:
		}
	}
	wantPrefix := "context.Background."
	if derivedDirectlyFromAWheelContext(kinds) {
		wantPrefix = "context.stopCtx." // a known difference: TestStdlibDifferenceDerivedContextString
	}
	if s := fmt.Sprint(ctx); !strings.HasPrefix(s, wantPrefix) {
		t.Errorf("ctx.String() = %q want prefix %q", s, wantPrefix)
	}
	t.Log(ctx)
	checkValues("before cancel")
	if testTimeout {
		timer := time.NewTimer(quiescent)
		defer timer.Stop()
		select {
		case <-ctx.Done():
		case <-timer.C:
			errorf("ctx should have timed out after %v", quiescent)
		}
		checkValues("after timeout")
	} else {
		k := r.Intn(len(cancels))
		cancels[k]()
		if synchronousBelow(kinds, cancelAt[k]) {
			select {
			case <-ctx.Done():
			default:
				errorf("ctx should be canceled")
			}
		} else {
			within(t, ctx, quiescent, prefix+" ctx across a known difference")
		}
		checkValues("after cancel")
	}
}

// synchronousBelow reports whether cancelling layer i of testLayers
// reaches the innermost layer before the cancel returns. A context joins
// the nearest cancellable layer above it; the join reaches it at once
// except when that layer is a wheel context and either it is reached
// through a value layer, a wrapper the package joins through a goroutine,
// or it was itself cancelled by the layer above it, not by its own cancel,
// when its derived contexts learn through one goroutine.
func synchronousBelow(kinds []int, i int) bool {
	above, wrapped := i, false
	for j := i + 1; j < len(kinds); j++ {
		if kinds[j] == valueLayer {
			wrapped = true
			continue
		}
		if kinds[above] == wheelLayer && (wrapped || above != i) {
			return false
		}
		above, wrapped = j, false
	}
	return true
}

// derivedDirectlyFromAWheelContext reports whether a cancellable layer of
// testLayers joins a wheel layer with no value layer in between: the
// context package then names its parent context.stopCtx.
func derivedDirectlyFromAWheelContext(kinds []int) bool {
	above, wrapped := -1, false
	for j, kind := range kinds {
		if kind == valueLayer {
			wrapped = true
			continue
		}
		if above >= 0 && kinds[above] == wheelLayer && !wrapped {
			return true
		}
		above, wrapped = j, false
	}
	return false
}

func TestStdlibWithCancelCanceledParent(t *testing.T) {
	h := stdlibTimer(t)
	grandparent, pcancel := context.WithCancelCause(context.Background())
	cause := fmt.Errorf("Because!")
	parent, cancelParent := h.WithTimeout(grandparent, veryLongDuration)
	defer cancelParent()
	pcancel(cause)
	expired, cancelExpired := h.WithTimeoutCause(context.Background(), shortDuration, cause)
	defer cancelExpired()
	<-expired.Done()

	for _, p := range []struct {
		ctx context.Context
		err error
	}{{parent, context.Canceled}, {expired, context.DeadlineExceeded}} {
		c, cancel := context.WithCancel(p.ctx)
		defer cancel()
		select {
		case <-c.Done():
		default:
			t.Errorf("child not done immediately upon construction")
		}
		if got, want := c.Err(), p.err; got != want {
			t.Errorf("child not canceled; got = %v, want = %v", got, want)
		}
		if got, want := context.Cause(c), cause; got != want {
			t.Errorf("child has wrong cause; got = %v, want = %v", got, want)
		}
	}
}

func TestStdlibWithCancelSimultaneouslyCanceledParent(t *testing.T) {
	h := stdlibTimer(t)
	// Cancel the parent goroutine concurrently with creating a child.
	for i := 0; i < 100; i++ {
		grandparent, pcancel := context.WithCancelCause(context.Background())
		cause := fmt.Errorf("Because!")
		parent, cancelParent := h.WithTimeout(grandparent, veryLongDuration)
		go pcancel(cause)

		c, cancel := context.WithCancel(parent)
		<-c.Done()
		if got, want := c.Err(), context.Canceled; got != want {
			t.Errorf("child not canceled; got = %v, want = %v", got, want)
		}
		if got, want := context.Cause(c), cause; got != want {
			t.Errorf("child has wrong cause; got = %v, want = %v", got, want)
		}
		cancel()

		// The same with the wheel context's own cancel and deadline.
		parent, cancelOwn := h.WithTimeout(context.Background(), veryLongDuration)
		go cancelOwn()
		c, cancel = context.WithCancel(parent)
		<-c.Done()
		assert.Equal(t, context.Canceled, c.Err())
		cancel()
		parent, cancelOwn = h.WithTimeoutCause(context.Background(), time.Duration(i%3)*shortDuration, cause)
		c, cancel = context.WithCancel(parent)
		<-c.Done()
		assert.Equal(t, context.DeadlineExceeded, c.Err())
		assert.Equal(t, cause, context.Cause(c))
		cancel()
		cancelOwn()
		cancelParent()
	}
}

func TestStdlibInvalidDerivedFail(t *testing.T) {
	h := stdlibTimer(t)
	var nilParent context.Context // a nil parent is the subject
	panicVal := recoveredValue(func() { h.WithDeadline(nilParent, time.Now().Add(shortDuration)) })
	if panicVal == nil {
		t.Error("expected panic")
	}
	panicVal = recoveredValue(func() { h.WithTimeout(nilParent, shortDuration) })
	if panicVal == nil {
		t.Error("expected panic")
	}
}

func recoveredValue(fn func()) (v any) {
	defer func() { v = recover() }()
	fn()
	return
}

func TestStdlibCause(t *testing.T) {
	var (
		forever       = 1e6 * time.Second
		parentCause   = fmt.Errorf("parentCause")
		childCause    = fmt.Errorf("childCause")
		tooSlow       = fmt.Errorf("tooSlow")
		finishedEarly = fmt.Errorf("finishedEarly")
	)
	h := stdlibTimer(t)
	// Contexts left live by a case are cancelled when the test ends.
	var mu sync.Mutex
	var cleanups []context.CancelFunc
	later := func(cancel context.CancelFunc) {
		mu.Lock()
		cleanups = append(cleanups, cancel)
		mu.Unlock()
	}
	t.Cleanup(func() {
		for _, cancel := range cleanups {
			cancel()
		}
	})
	for _, test := range []struct {
		name  string
		ctx   func(t *testing.T) context.Context
		err   error
		cause error
	}{
		{
			name: "WithTimeout",
			ctx: func(*testing.T) context.Context {
				ctx, cancel := h.WithTimeout(context.Background(), 0)
				cancel()
				return ctx
			},
			err:   context.DeadlineExceeded,
			cause: context.DeadlineExceeded,
		},
		{
			name: "WithTimeout canceled",
			ctx: func(*testing.T) context.Context {
				ctx, cancel := h.WithTimeout(context.Background(), forever)
				cancel()
				return ctx
			},
			err:   context.Canceled,
			cause: context.Canceled,
		},
		{
			name: "WithTimeoutCause",
			ctx: func(*testing.T) context.Context {
				ctx, cancel := h.WithTimeoutCause(context.Background(), 0, tooSlow)
				cancel()
				return ctx
			},
			err:   context.DeadlineExceeded,
			cause: tooSlow,
		},
		{
			name: "WithTimeoutCause canceled",
			ctx: func(*testing.T) context.Context {
				ctx, cancel := h.WithTimeoutCause(context.Background(), forever, tooSlow)
				cancel()
				return ctx
			},
			err:   context.Canceled,
			cause: context.Canceled,
		},
		{
			name: "WithTimeoutCause stacked",
			ctx: func(*testing.T) context.Context {
				ctx, cancel := context.WithCancelCause(context.Background())
				ctx, cancelTimeout := h.WithTimeoutCause(ctx, 0, tooSlow)
				later(cancelTimeout)
				cancel(finishedEarly)
				return ctx
			},
			err:   context.DeadlineExceeded,
			cause: tooSlow,
		},
		{
			name: "WithTimeoutCause stacked canceled",
			ctx: func(*testing.T) context.Context {
				ctx, cancel := context.WithCancelCause(context.Background())
				ctx, cancelTimeout := h.WithTimeoutCause(ctx, forever, tooSlow)
				later(cancelTimeout)
				cancel(finishedEarly)
				return ctx
			},
			err:   context.Canceled,
			cause: finishedEarly,
		},
		{
			name: "WithDeadlineCause in the past",
			ctx: func(*testing.T) context.Context {
				ctx, cancel := h.WithDeadlineCause(context.Background(), time.Now().Add(-time.Second), tooSlow)
				later(cancel)
				return ctx
			},
			err:   context.DeadlineExceeded,
			cause: tooSlow,
		},
		{
			name: "WithTimeoutCause expired",
			ctx: func(t *testing.T) context.Context {
				h, fake := newFakeTimer(t)
				ctx, cancel := h.WithTimeoutCause(context.Background(), time.Minute, tooSlow)
				later(cancel)
				fake.Advance(time.Minute + testTick)
				return ctx
			},
			err:   context.DeadlineExceeded,
			cause: tooSlow,
		},
		{
			name: "WithCancelCause child: wheel context's deadline before child",
			ctx: func(t *testing.T) context.Context {
				h, fake := newFakeTimer(t)
				ctx, cancel := h.WithTimeoutCause(context.Background(), time.Minute, tooSlow)
				later(cancel)
				ctx, cancelChild := context.WithCancelCause(ctx)
				fake.Advance(time.Minute + testTick)
				cancelChild(childCause)
				return ctx
			},
			err:   context.DeadlineExceeded,
			cause: tooSlow,
		},
		{
			name: "WithCancelCause child: wheel context's cancel before child",
			ctx: func(*testing.T) context.Context {
				ctx, cancelParent := h.WithTimeout(context.Background(), forever)
				ctx, cancelChild := context.WithCancelCause(ctx)
				cancelParent()
				cancelChild(childCause)
				return ctx
			},
			err:   context.Canceled,
			cause: context.Canceled,
		},
		{
			name: "WithCancelCause child: wheel context's cancel after child",
			ctx: func(*testing.T) context.Context {
				ctx, cancelParent := h.WithTimeout(context.Background(), forever)
				ctx, cancelChild := context.WithCancelCause(ctx)
				cancelChild(childCause)
				cancelParent()
				return ctx
			},
			err:   context.Canceled,
			cause: childCause,
		},
		{
			name: "WithoutCancel timeout",
			ctx: func(*testing.T) context.Context {
				ctx, cancel := h.WithTimeoutCause(context.Background(), 0, tooSlow)
				ctx = context.WithoutCancel(ctx)
				cancel()
				return ctx
			},
			err:   nil,
			cause: nil,
		},
		{
			name: "parent of custom context not canceled",
			ctx: func(*testing.T) context.Context {
				ctx, cancel1 := context.WithCancelCause(context.Background())
				ctx, cancelWheel := h.WithTimeout(ctx, forever)
				later(cancelWheel)
				ctx, cancel2 := newCustomContext(ctx)
				cancel2()
				later(func() { cancel1(nil) })
				return ctx
			},
			err:   context.Canceled,
			cause: context.Canceled,
		},
		{
			name: "parent of custom context is canceled before",
			ctx: func(*testing.T) context.Context {
				ctx, cancel1 := context.WithCancelCause(context.Background())
				ctx, cancelWheel := h.WithTimeout(ctx, forever)
				later(cancelWheel)
				ctx, cancel2 := newCustomContext(ctx)
				cancel1(parentCause)
				cancel2()
				return ctx
			},
			err:   context.Canceled,
			cause: parentCause,
		},
		{
			name: "parent of custom context is canceled after",
			ctx: func(*testing.T) context.Context {
				ctx, cancel1 := context.WithCancelCause(context.Background())
				ctx, cancelWheel := h.WithTimeout(ctx, forever)
				later(cancelWheel)
				ctx, cancel2 := newCustomContext(ctx)
				cancel2()
				cancel1(parentCause)
				return ctx
			},
			err: context.Canceled,
			// As in the package's test: the custom context was canceled
			// first, but Cause cannot tell and returns the parent's cause.
			cause: parentCause,
		},
	} {
		t.Run(test.name, func(t *testing.T) {
			t.Parallel()
			ctx := test.ctx(t)
			if got, want := ctx.Err(), test.err; want != got {
				t.Errorf("ctx.Err() = %v want %v", got, want)
			}
			if got, want := context.Cause(ctx), test.cause; want != got {
				t.Errorf("Cause(ctx) = %v want %v", got, want)
			}
		})
	}
}

func TestStdlibCauseRace(t *testing.T) {
	h := stdlibTimer(t)
	cause := errors.New("TestCauseRace")
	parent, cancelParent := context.WithCancelCause(context.Background())
	canceled, cancelCanceled := h.WithTimeout(parent, veryLongDuration)
	defer cancelCanceled()
	expiring, cancelExpiring := h.WithTimeoutCause(context.Background(), shortDuration, cause)
	defer cancelExpiring()
	go func() {
		cancelParent(cause)
	}()
	for _, ctx := range []context.Context{canceled, expiring} {
		for {
			// Poll Cause, rather than waiting for Done, to test that
			// access to the underlying cause is synchronized properly.
			if err := context.Cause(ctx); err != nil {
				if err != cause {
					t.Errorf("Cause returned %v, want %v", err, cause)
				}
				break
			}
			runtime.Gosched()
		}
	}
}

func TestStdlibWithoutCancel(t *testing.T) {
	h := stdlibTimer(t)
	key, value := ctxKey("key"), "value"
	ctx := context.WithValue(context.Background(), key, value)
	ctx, cancel := h.WithTimeout(ctx, shortDuration)
	defer cancel()
	ctx = context.WithoutCancel(ctx)
	check := func(when string) {
		if d, ok := ctx.Deadline(); !d.IsZero() || ok != false {
			t.Errorf("%s: ctx.Deadline() = %v, %v want zero, false", when, d, ok)
		}
		if done := ctx.Done(); done != nil {
			t.Errorf("%s: ctx.Done() = %v want nil", when, done)
		}
		if err := ctx.Err(); err != nil {
			t.Errorf("%s: ctx.Err() = %v want nil", when, err)
		}
		if v := ctx.Value(key); v != value {
			t.Errorf("%s: ctx.Value(%q) = %q want %q", when, key, v, value)
		}
	}
	check("before the deadline")
	// A wheel context made on it has its own deadline, and none other.
	w, cancelW := h.WithTimeout(ctx, veryLongDuration)
	defer cancelW()
	time.Sleep(10 * shortDuration) // the deadline of the context under it passes: real time is the subject
	check("after the deadline")
	assert.NoError(t, w.Err())
	assert.Equal(t, value, w.Value(key))
}

type customDoneContext struct {
	context.Context
	donec chan struct{}
}

func (c *customDoneContext) Done() <-chan struct{} {
	return c.donec
}

func TestStdlibCustomContextPropagation(t *testing.T) {
	h := stdlibTimer(t)
	cause := errors.New("TestCustomContextPropagation")
	donec := make(chan struct{})
	ctx1, cancel1 := h.WithTimeoutCause(context.Background(), shortDuration, cause)
	defer cancel1()
	ctx2 := &customDoneContext{
		Context: ctx1,
		donec:   donec,
	}
	ctx3, cancel3 := context.WithCancel(ctx2)
	defer cancel3()

	<-ctx1.Done()
	close(donec)

	<-ctx3.Done()
	if got, want := ctx3.Err(), context.DeadlineExceeded; got != want {
		t.Errorf("child not canceled; got = %v, want = %v", got, want)
	}
	if got, want := context.Cause(ctx3), cause; got != want {
		t.Errorf("child has wrong cause; got = %v, want = %v", got, want)
	}
}

// customCauseContext is a custom Context used to test context.Cause.
type customCauseContext struct {
	mu   sync.Mutex
	done chan struct{}
	err  error

	cancelChild context.CancelFunc
}

func (ccc *customCauseContext) Deadline() (deadline time.Time, ok bool) {
	return
}

func (ccc *customCauseContext) Done() <-chan struct{} {
	ccc.mu.Lock()
	defer ccc.mu.Unlock()
	return ccc.done
}

func (ccc *customCauseContext) Err() error {
	ccc.mu.Lock()
	defer ccc.mu.Unlock()
	return ccc.err
}

func (ccc *customCauseContext) Value(key any) any {
	return nil
}

func (ccc *customCauseContext) cancel() {
	ccc.mu.Lock()
	ccc.err = context.Canceled
	close(ccc.done)
	cancelChild := ccc.cancelChild
	ccc.mu.Unlock()

	if cancelChild != nil {
		cancelChild()
	}
}

func (ccc *customCauseContext) setCancelChild(cancelChild context.CancelFunc) {
	ccc.cancelChild = cancelChild
}

func TestStdlibCustomContextCause(t *testing.T) {
	h := stdlibTimer(t)
	checkCanceled := func(when string, ctx context.Context) {
		t.Helper()
		if got := ctx.Err(); got != context.Canceled {
			t.Errorf("%s ctx.Err() = %v, want %v", when, got, context.Canceled)
		}
		if got := context.Cause(ctx); got != context.Canceled {
			t.Errorf("%s Cause(ctx) = %v, want %v", when, got, context.Canceled)
		}
	}

	// Test that if we pass a custom context to WithTimeout, and then
	// cancel that child context, the child is canceled but the parent
	// custom context is not.
	ccc := &customCauseContext{
		done: make(chan struct{}),
	}
	ctx, cancel := h.WithTimeout(ccc, veryLongDuration)
	cancel()
	checkCanceled("after CancelFunc", ctx)
	if got := ccc.Err(); got != nil {
		t.Errorf("after CancelFunc ccc.Err() = %v, want %v", got, nil)
	}

	// Test that if we now cancel the parent custom context, the child's
	// error and cause do not change.
	ccc.cancel()
	checkCanceled("after ccc.cancel", ctx)

	// Test that if we associate a custom context with a child, then
	// canceling the custom context cancels the child.
	ccc = &customCauseContext{
		done: make(chan struct{}),
	}
	ctx, cancel = h.WithTimeout(ccc, veryLongDuration)
	ccc.setCancelChild(cancel)
	ccc.cancel()
	checkCanceled("after ccc.cancel with the child's cancel", ctx)

	// And that a custom parent's cancellation alone reaches the child.
	ccc = &customCauseContext{
		done: make(chan struct{}),
	}
	ctx, cancel = h.WithTimeout(ccc, veryLongDuration)
	defer cancel()
	ccc.cancel()
	within(t, ctx, quiescent, "child of a cancelled custom context")
	checkCanceled("after ccc.cancel alone", ctx)
}

func TestStdlibAfterFuncCalledAfterCancel(t *testing.T) {
	h := stdlibTimer(t)
	ctx, cancel := h.WithTimeout(context.Background(), veryLongDuration)
	donec := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		close(donec)
	})
	select {
	case <-donec:
		t.Fatalf("AfterFunc called before context is done")
	case <-time.After(shortDuration):
	}
	cancel()
	select {
	case <-donec:
	case <-time.After(quiescent):
		t.Fatalf("AfterFunc not called after context is canceled")
	}
	if stop() {
		t.Fatalf("stop() = true, want false")
	}
}

// awaitAfterFunc registers a function on ctx with context.AfterFunc and
// fails the test with msg unless it is called within quiescent.
func awaitAfterFunc(t *testing.T, ctx context.Context, msg string) {
	t.Helper()
	donec := make(chan struct{})
	context.AfterFunc(ctx, func() {
		close(donec)
	})
	select {
	case <-donec:
	case <-time.After(quiescent):
		t.Fatal(msg)
	}
}

func TestStdlibAfterFuncCalledAfterTimeout(t *testing.T) {
	h := stdlibTimer(t)
	ctx, cancel := h.WithTimeout(context.Background(), shortDuration)
	defer cancel()
	awaitAfterFunc(t, ctx, "AfterFunc not called after context is canceled")
}

func TestStdlibAfterFuncCalledImmediately(t *testing.T) {
	h := stdlibTimer(t)
	ctx, cancel := h.WithTimeout(context.Background(), veryLongDuration)
	cancel()
	awaitAfterFunc(t, ctx, "AfterFunc not called for already-canceled context")
}

func TestStdlibAfterFuncNotCalledAfterStop(t *testing.T) {
	h := stdlibTimer(t)
	ctx, cancel := h.WithTimeout(context.Background(), veryLongDuration)
	donec := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		close(donec)
	})
	if !stop() {
		t.Fatalf("stop() = false, want true")
	}
	cancel()
	select {
	case <-donec:
		t.Fatalf("AfterFunc called for already-canceled context")
	case <-time.After(shortDuration):
	}
	if stop() {
		t.Fatalf("stop() = true, want false")
	}
}

// This test verifies that canceling a context does not block waiting for AfterFuncs to finish.
func TestStdlibAfterFuncCalledAsynchronously(t *testing.T) {
	h := stdlibTimer(t)
	ctx, cancel := h.WithTimeout(context.Background(), veryLongDuration)
	donec := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		// The channel send blocks until donec is read from.
		donec <- struct{}{}
	})
	defer stop()
	cancel()
	// After cancel returns, read from donec and unblock the AfterFunc.
	select {
	case <-donec:
	case <-time.After(quiescent):
		t.Fatalf("AfterFunc not called after context is canceled")
	}
}

// customContext is a custom Context implementation.
type customContext struct {
	parent context.Context

	doneOnce sync.Once
	donec    chan struct{}
	err      error
}

func newCustomContext(parent context.Context) (context.Context, context.CancelFunc) {
	c := &customContext{
		parent: parent,
		donec:  make(chan struct{}),
	}
	context.AfterFunc(parent, func() {
		c.doneOnce.Do(func() {
			c.err = parent.Err()
			close(c.donec)
		})
	})
	return c, func() {
		c.doneOnce.Do(func() {
			c.err = context.Canceled
			close(c.donec)
		})
	}
}

func (c *customContext) Deadline() (time.Time, bool) {
	return c.parent.Deadline()
}

func (c *customContext) Done() <-chan struct{} {
	return c.donec
}

func (c *customContext) Err() error {
	select {
	case <-c.donec:
		return c.err
	default:
		return nil
	}
}

func (c *customContext) Value(key any) any {
	return c.parent.Value(key)
}

// afterFuncContext is a context that's not one of the types defined in
// context.go, that supports registering AfterFuncs.
type afterFuncContext struct {
	mu         sync.Mutex
	afterFuncs map[*byte]func()
	done       chan struct{}
	err        error
}

var _ context.Context = (*afterFuncContext)(nil)

func (c *afterFuncContext) Deadline() (time.Time, bool) {
	return time.Time{}, false
}

func (c *afterFuncContext) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done == nil {
		c.done = make(chan struct{})
	}
	return c.done
}

func (c *afterFuncContext) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

func (c *afterFuncContext) Value(key any) any {
	return nil
}

func (c *afterFuncContext) AfterFunc(f func()) func() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := new(byte)
	if c.afterFuncs == nil {
		c.afterFuncs = make(map[*byte]func())
	}
	c.afterFuncs[k] = f
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		_, ok := c.afterFuncs[k]
		delete(c.afterFuncs, k)
		return ok
	}
}

func (c *afterFuncContext) cancel(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return
	}
	c.err = err
	for _, f := range c.afterFuncs {
		go f()
	}
	c.afterFuncs = nil
}

func (c *afterFuncContext) registered() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.afterFuncs)
}

func TestStdlibCustomContextAfterFuncTimeout(t *testing.T) {
	h := stdlibTimer(t)
	ctx0 := &afterFuncContext{}
	ctx1, cancel := h.WithTimeout(ctx0, veryLongDuration)
	defer cancel()
	ctx0.cancel(context.Canceled)
	<-ctx1.Done()
}

func TestStdlibCustomContextAfterFuncUnregisterTimeout(t *testing.T) {
	h := stdlibTimer(t)
	ctx0 := &afterFuncContext{}
	_, cancel := h.WithTimeout(ctx0, veryLongDuration)
	if got, want := ctx0.registered(), 1; got != want {
		t.Errorf("after WithTimeout(ctx0, d): ctx0 has %v afterFuncs, want %v", got, want)
	}
	cancel()
	if got, want := ctx0.registered(), 0; got != want {
		t.Errorf("after canceling WithTimeout(ctx0, d): ctx0 has %v afterFuncs, want %v", got, want)
	}
}

// TestStdlibContextErrDoneRace: Err is never non-nil while Done is open,
// for a cancel and for a deadline (golang/go#75533).
func TestStdlibContextErrDoneRace(t *testing.T) {
	h := stdlibTimer(t)
	for i := range 10 {
		ctx, cancel := h.WithTimeout(context.Background(), time.Duration(i%2)*veryLongDuration+shortDuration)
		donec := ctx.Done()
		if i%2 == 1 {
			go cancel()
		}
		for ctx.Err() == nil {
			runtime.Gosched()
		}
		select {
		case <-donec:
		default:
			t.Fatalf("ctx.Err is non-nil, but ctx.Done is not closed")
		}
		cancel()
	}
}

// The known differences.

// TestStdlibDifferenceParentCancelReachesDerivedContextsThroughAGoroutine:
// a cancellation of the wheel context's parent reaches the wheel context
// before the parent's cancel returns, as the package's does, but reaches
// the contexts derived from the wheel context through one goroutine for
// all of them: held back here, it shows the moment in between, when a
// derived context is not done yet and one cancelled then keeps its own
// cause. The wheel context's CancelFunc returns only once they are done.
// The context package makes no such goroutine: its contexts are all done
// when the parent's cancel returns.
func TestStdlibDifferenceParentCancelReachesDerivedContextsThroughAGoroutine(t *testing.T) {
	h := stdlibTimer(t)
	parent, cancelParent := context.WithCancelCause(context.Background())
	defer cancelParent(nil)
	c, cancel := h.WithTimeout(parent, veryLongDuration)
	defer cancel()
	const n = 1000
	children := make([]context.Context, n)
	causes := make([]context.CancelCauseFunc, n)
	for i := range children {
		children[i], causes[i] = context.WithCancelCause(c)
		defer causes[i](nil)
	}
	x := c.(*wheelContext).extras.Load()
	x.runMu.Lock() // holds back the goroutine that tells the derived contexts
	before := runtime.NumGoroutine()
	cause := errors.New("client went away")
	cancelParent(cause)
	assert.Equal(t, context.Canceled, c.Err(), "the wheel context at once, as the package's")
	assert.Equal(t, cause, context.Cause(c))
	for _, child := range children {
		require.NoError(t, child.Err(), "a derived context learns through the goroutine")
	}
	own := errors.New("own cause")
	causes[0](own)
	assert.Less(t, runtime.NumGoroutine()-before, n/10, "one goroutine for all, not one each")
	x.runMu.Unlock()
	cancel() // returns once the goroutine has told them all
	for _, child := range children[1:] {
		require.True(t, isClosed(child.Done()))
		require.Equal(t, context.Canceled, child.Err())
		require.Equal(t, cause, context.Cause(child))
	}
	assert.Equal(t, own, context.Cause(children[0]), "the package's child would have the parent's cause")

	stdParent, cancelStdParent := context.WithCancelCause(context.Background())
	std, cancelStd := context.WithTimeout(stdParent, veryLongDuration)
	defer cancelStd()
	stdChild, cancelStdChild := context.WithCancel(std)
	defer cancelStdChild()
	cancelStdParent(cause)
	assert.True(t, isClosed(stdChild.Done()), "the package's: done when the parent's cancel returns")
}

// TestStdlibDifferenceDerivedThroughAWrapperJoinsThroughAGoroutine: a
// context derived from a wheel context through a wrapper, context.WithValue
// or a struct embedding the context, joins it through a goroutine of its
// own while it lives, as the context package joins any parent it cannot
// see into; derived from the package's contexts the same way, it joins
// without one. Errors and causes are the same either way
// (TestContextDerivedThroughAWrapperSeeTheDeadline).
func TestStdlibDifferenceDerivedThroughAWrapperJoinsThroughAGoroutine(t *testing.T) {
	h := stdlibTimer(t)
	const n = 1000
	wheel, cancelWheel := h.WithTimeout(context.Background(), veryLongDuration)
	defer cancelWheel()
	std, cancelStd := context.WithTimeout(context.Background(), veryLongDuration)
	defer cancelStd()
	for name, wrap := range map[string]func(context.Context) context.Context{
		"WithValue": func(c context.Context) context.Context { return context.WithValue(c, ctxKey("k"), "v") },
		"embedding": func(c context.Context) context.Context { return otherContext{c} },
	} {
		wheelStarted, release := goroutinesFor(n, func() context.CancelFunc {
			_, cancel := context.WithCancel(wrap(wheel))
			return cancel
		})
		release()
		stdStarted, release := goroutinesFor(n, func() context.CancelFunc {
			_, cancel := context.WithCancel(wrap(std))
			return cancel
		})
		release()
		assert.Greater(t, wheelStarted, n*9/10, "%s of a wheel context: a goroutine each", name)
		assert.Less(t, stdStarted, n/10, "%s of the package's context: none", name)
	}
}

// TestStdlibDifferenceDerivedContextString: a context derived from a wheel
// context names its parent as the context package names a parent joined
// through AfterFunc, context.stopCtx, not by the chain above it.
func TestStdlibDifferenceDerivedContextString(t *testing.T) {
	h := stdlibTimer(t)
	wheel, cancelWheel := h.WithTimeout(context.Background(), veryLongDuration)
	defer cancelWheel()
	child, cancelChild := context.WithCancel(wheel)
	defer cancelChild()
	assert.Equal(t, "context.stopCtx.WithCancel", fmt.Sprint(child))

	std, cancelStd := context.WithTimeout(context.Background(), veryLongDuration)
	defer cancelStd()
	stdChild, cancelStdChild := context.WithCancel(std)
	defer cancelStdChild()
	assert.True(t, strings.HasPrefix(fmt.Sprint(stdChild), "context.Background.WithDeadline("), fmt.Sprint(stdChild))
}

// TestStdlibDifferenceDoneAtTheTickEndAfterTheDeadline: the wheel keeps a
// deadline at its resolution, which is what it is for: the context is
// done at the end of the tick that covers its deadline, never before the
// deadline, where the package's is done at the deadline.
func TestStdlibDifferenceDoneAtTheTickEndAfterTheDeadline(t *testing.T) {
	h, fake := newFakeTimer(t)
	c, cancel := h.WithTimeout(context.Background(), time.Second+testTick/2)
	defer cancel()
	fake.Advance(time.Second + testTick/2)
	assert.NoError(t, c.Err(), "at its deadline, in the middle of a tick")
	fake.Advance(testTick / 2)
	assert.Equal(t, context.DeadlineExceeded, c.Err(), "at the end of that tick")
}

// TestStdlibDifferenceTimeoutDeadlineIsTheTimersTo8ns: WithTimeout's
// Deadline is fixed at its first call: the wall clock then plus what
// remains until the deadline on the timer's clock, kept to 8ns, rounded
// up, where the package's is time.Now().Add(d), fixed at the call, to the
// nanosecond. A step of the wall clock before the first call moves it, as
// it moves the time the context ends at; one after, not.
func TestStdlibDifferenceTimeoutDeadlineIsTheTimersTo8ns(t *testing.T) {
	h, fake := newFakeTimer(t)
	c, cancel := h.WithTimeout(context.Background(), 5*time.Nanosecond+time.Second)
	defer cancel()
	want := fake.Now().Add(8*time.Nanosecond + time.Second)
	fake.StepWall(time.Hour)
	d, _ := c.Deadline()
	assert.True(t, want.Add(time.Hour).Equal(d), "stepped before its first call: %v", d)
	fake.StepWall(-time.Hour)
	d2, _ := c.Deadline()
	assert.Equal(t, d, d2, "fixed at the first call")
}

// TestStdlibDifferenceParentCancelKeepsTheTimeoutUntilItsDeadline: a wheel
// context whose parent is cancelled, whose CancelFunc is not called and
// from which nothing was derived, keeps its timeout, and its place under
// WithMaxPendingTimeouts, until its deadline; the package's stops its
// runtime timer when the parent is cancelled.
func TestStdlibDifferenceParentCancelKeepsTheTimeoutUntilItsDeadline(t *testing.T) {
	h, fake := newFakeTimer(t, WithMaxPendingTimeouts(1))
	parent, cancelParent := context.WithCancel(context.Background())
	c, cancel := h.WithTimeout(parent, time.Minute)
	defer cancel()
	cancelParent()
	assert.Equal(t, context.Canceled, c.Err(), "done at once")
	fake.Advance(time.Minute - testTick)
	assert.Equal(t, int64(1), h.PendingTimeouts(), "the timeout stays until the deadline")
	_, cancelFallback := h.WithTimeout(context.Background(), time.Hour)
	defer cancelFallback()
	assert.Equal(t, uint64(1), h.Stats().ContextFallbacks, "and keeps its place under the limit")
	fake.Advance(testTick)
	assert.Zero(t, h.PendingTimeouts(), "released at the deadline")
}
