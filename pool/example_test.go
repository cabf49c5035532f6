package pool_test

import (
	"fmt"
	"time"

	"github.com/wheeltimer/wheeltimer/hashedwheel"
	"github.com/wheeltimer/wheeltimer/pool"
)

// Inline runs a task on the goroutine that calls Execute, before Execute
// returns. Given to a timer, it makes the timer's worker goroutine run the
// expired tasks itself, one after another, as Netty does by default.
func Example_inline() {
	ran := false
	if err := pool.Inline.Execute(func() { ran = true }); err != nil {
		panic(err)
	}
	fmt.Println("ran before Execute returned:", ran)

	timer, err := hashedwheel.New(
		hashedwheel.WithTickDuration(10*time.Millisecond),
		hashedwheel.WithExecutor(pool.Inline),
	)
	if err != nil {
		panic(err)
	}
	defer timer.Stop()
	done := make(chan struct{})
	count := 0
	for range 3 {
		if _, err := timer.AfterFunc(10*time.Millisecond, func() {
			count++ // safe without a lock: only the worker runs these tasks
			if count == 3 {
				close(done)
			}
		}); err != nil {
			panic(err)
		}
	}
	<-done
	fmt.Println("tasks run on the worker:", count)
	// Output:
	// ran before Execute returned: true
	// tasks run on the worker: 3
}

// NewAnts makes a bounded goroutine pool. Execute waits while every
// goroutine runs a task; after Release it accepts nothing.
func ExampleNewAnts() {
	exec, err := pool.NewAnts(4)
	if err != nil {
		panic(err)
	}
	results := make(chan int, 10)
	for i := range 10 {
		if err := exec.Execute(func() { results <- i * i }); err != nil {
			panic(err)
		}
	}
	sum := 0
	for range 10 {
		sum += <-results
	}
	fmt.Println("sum of squares:", sum)

	exec.Release()
	err = exec.Execute(func() {})
	fmt.Println("refused after Release:", err != nil)
	// Output:
	// sum of squares: 285
	// refused after Release: true
}

// goExecutor is the simplest Executor: a new goroutine per task.
type goExecutor struct{}

func (goExecutor) Execute(task func()) error {
	go task()
	return nil
}

// Any type with an Execute method can run a timer's expired tasks. The
// caller owns it: the timer's Stop does not release it.
func ExampleExecutor() {
	timer, err := hashedwheel.New(
		hashedwheel.WithTickDuration(10*time.Millisecond),
		hashedwheel.WithExecutor(goExecutor{}),
	)
	if err != nil {
		panic(err)
	}
	defer timer.Stop()

	done := make(chan string)
	if _, err := timer.AfterFunc(10*time.Millisecond, func() { done <- "ran on a goroutine of its own" }); err != nil {
		panic(err)
	}
	fmt.Println(<-done)
	fmt.Println("executor failures:", timer.Stats().ExecutorFailures)
	// Output:
	// ran on a goroutine of its own
	// executor failures: 0
}
