// Package racetest runs the producers of the tests that close a queue
// while values are being pushed into it.
package racetest

import "sync"

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
