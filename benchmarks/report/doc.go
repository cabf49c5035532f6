// Package report turns the scenario results into docs/benchmarks.md and
// its charts, and keeps the one-line progress display of a run.
package report
