package mpsc_test

import (
	"fmt"
	"runtime"
	"sync"

	"github.com/wheeltimer/wheeltimer/mpsc"
)

func ExampleNew() {
	q := mpsc.New[string]()
	a, b := "a", "b"
	q.Push(&a)
	q.Push(&b)
	for {
		v, ok := q.Pop()
		if !ok {
			break
		}
		fmt.Println(*v)
	}
	fmt.Println("empty:", q.Empty())
	// Output:
	// a
	// b
	// empty: true
}

// Many goroutines push at once; one consumer pops. Each producer's values
// come out in the order it pushed them.
func ExampleQueue() {
	type item struct{ producer, seq int }
	const producers, perProducer = 4, 1000

	q := mpsc.New[item]()
	var wg sync.WaitGroup
	for p := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perProducer {
				q.Push(&item{p, i})
			}
		}()
	}

	next := make([]int, producers) // the seq expected next from each producer
	popped, inOrder := 0, true
	for popped < producers*perProducer {
		v, ok := q.Pop()
		if !ok {
			runtime.Gosched() // nothing ready yet: let the producers run
			continue
		}
		inOrder = inOrder && v.seq == next[v.producer]
		next[v.producer]++
		popped++
	}
	wg.Wait()
	fmt.Println("popped:", popped, "pushed:", q.Pushed(), "each producer in order:", inOrder)
	// Output: popped: 4000 pushed: 4000 each producer in order: true
}

// Close makes later pushes fail, while every push accepted before it can
// still be popped: the consumer drains until Empty.
func ExampleQueue_Close() {
	q := mpsc.New[int]()
	one, two, three := 1, 2, 3
	_, okOne := q.Push(&one)
	_, okTwo := q.Push(&two)
	fmt.Println(okOne, okTwo)
	q.Close()
	_, ok := q.Push(&three)
	fmt.Println("push after Close:", ok)
	for !q.Empty() {
		if v, ok := q.Pop(); ok {
			fmt.Println("drained", *v)
		}
	}
	// Output:
	// true true
	// push after Close: false
	// drained 1
	// drained 2
}
