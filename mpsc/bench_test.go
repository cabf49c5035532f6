package mpsc

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
)

// The benchmarks push from every P at once while one consumer goroutine
// drains, for the Queue and for the two usual alternatives: a buffered
// channel and a mutex-guarded slice swapped out by the consumer.

type pushPop interface {
	push(v *int)
	drain() int // pops what is there; returns how many
}

type queueImpl struct{ q *Queue[int] }

func (q queueImpl) push(v *int) { q.q.Push(v) }
func (q queueImpl) drain() int {
	n := 0
	for {
		if _, ok := q.q.Pop(); !ok {
			return n
		}
		n++
	}
}

type chanImpl struct{ c chan *int }

func (c chanImpl) push(v *int) { c.c <- v }
func (c chanImpl) drain() int {
	n := 0
	for {
		select {
		case <-c.c:
			n++
		default:
			return n
		}
	}
}

type mutexImpl struct {
	mu    *sync.Mutex
	items *[]*int
	spare *[]*int
}

func (m mutexImpl) push(v *int) {
	m.mu.Lock()
	*m.items = append(*m.items, v)
	m.mu.Unlock()
}

func (m mutexImpl) drain() int {
	m.mu.Lock()
	*m.items, *m.spare = (*m.spare)[:0], *m.items
	m.mu.Unlock()
	return len(*m.spare)
}

func benchmarkPush(b *testing.B, impl pushPop) {
	var stop atomic.Bool
	done := make(chan struct{})
	go func() { // the single consumer
		defer close(done)
		for !stop.Load() {
			if impl.drain() == 0 {
				runtime.Gosched()
			}
		}
		impl.drain()
	}()
	v := new(int)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			impl.push(v)
		}
	})
	b.StopTimer()
	stop.Store(true)
	<-done
}

func BenchmarkPush(b *testing.B) {
	b.Run("mpsc", func(b *testing.B) {
		benchmarkPush(b, queueImpl{New[int]()})
	})
	b.Run("chan-1024", func(b *testing.B) {
		benchmarkPush(b, chanImpl{make(chan *int, 1024)})
	})
	b.Run("mutex-slice", func(b *testing.B) {
		benchmarkPush(b, mutexImpl{&sync.Mutex{}, new([]*int), new([]*int)})
	})
}

// BenchmarkPushPop is one goroutine pushing then popping: the uncontended
// cost of a round trip.
func BenchmarkPushPop(b *testing.B) {
	q := New[int]()
	v := new(int)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		q.Push(v)
		q.Pop()
	}
}
