// Package racetest runs the racing producers of the concurrency tests:
// many goroutines pushing into one queue at once.
package racetest

import "sync"

// Run starts n goroutines, each of which calls push(p, i), p being its
// number, for i = 0, 1, …, perProducer-1. The returned wait waits for all
// of them to finish.
func Run(n, perProducer int, push func(p, i int)) (wait func()) {
	var wg sync.WaitGroup
	for p := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perProducer {
				push(p, i)
			}
		}()
	}
	return wg.Wait
}

// Producers starts n goroutines, each of which calls push(p, i), p being
// its number, for i = 0, 1, 2, … until push returns false. They wait until
// start is called, so that they race from the first push. wait waits for
// every producer to be refused and returns, for each, the i of the pushes
// it made that succeeded, in order.
func Producers(n int, push func(p, i int) bool) (start func(), wait func() [][]int) {
	accepted := make([][]int, n)
	gate := make(chan struct{})
	var wg sync.WaitGroup
	for p := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-gate
			for i := 0; push(p, i); i++ {
				accepted[p] = append(accepted[p], i)
			}
		}()
	}
	start = func() { close(gate) }
	wait = func() [][]int {
		wg.Wait()
		return accepted
	}
	return start, wait
}
