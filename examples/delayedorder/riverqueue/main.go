// Command riverqueue is the shop of examples/delayedorder on a polling job
// queue, github.com/riverqueue/river, for comparison: the same HTTP API
// (POST /orders, POST /orders/{id}/pay), the same tables and the same
// conditional UPDATE to cancel an order, run by a river job scheduled at
// the order's deadline and inserted in the order's transaction. A replica
// is a river client with river's defaults: every 5 s the leader makes the
// jobs due within the next 5 s available, and each client takes those
// whose time has come when it next fetches work, every second.
//
//	go run . -db postgres://localhost/shop -listen :8081 [-pay-within 2s]
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
)

func main() {
	os.Exit(realMain(os.Args[1:], os.Stdout, os.Stderr))
}

func realMain(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("riverqueue", flag.ContinueOnError)
	fs.SetOutput(stderr)
	db := fs.String("db", "", "URL of the PostgreSQL database shared by the replicas (postgres://...)")
	listen := fs.String("listen", "127.0.0.1:8081", "serve the shop's HTTP API on this address")
	payWithin := fs.Duration("pay-within", 2*time.Second, "unpaid orders are cancelled this long after placement")
	workers := fs.Int("workers", 100, "river workers of this replica")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *db == "" || *payWithin <= 0 || *workers <= 0 {
		fmt.Fprintln(stderr, "riverqueue: -db is required; -pay-within and -workers must be positive")
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	if err := run(ctx, *db, *listen, *payWithin, *workers, stdout, log); err != nil {
		fmt.Fprintln(stderr, "riverqueue:", err)
		return 1
	}
	return 0
}

// schema is examples/delayedorder's, without the claims: river holds the
// jobs.
const schema = `
CREATE TABLE IF NOT EXISTS orders (
	id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	created_at timestamptz NOT NULL,
	deadline   timestamptz NOT NULL,
	status     text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'paid', 'cancelled')),
	settled_at timestamptz
);
CREATE TABLE IF NOT EXISTS cancellations (
	order_id     bigint NOT NULL REFERENCES orders (id),
	cancelled_at timestamptz NOT NULL,
	cancelled_by text NOT NULL
);
`

// run sets up the tables and river's, and serves until ctx ends.
func run(ctx context.Context, url, listen string, payWithin time.Duration, workers int, stdout io.Writer, log *slog.Logger) error {
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		return err
	}
	defer pool.Close()
	if err := migrate(ctx, pool); err != nil {
		return err
	}
	ws := river.NewWorkers()
	river.AddWorker(ws, &cancelWorker{pool: pool})
	client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{
		Queues:  map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: workers}},
		Workers: ws,
		Logger:  log,
	})
	if err != nil {
		return err
	}
	if err := client.Start(ctx); err != nil {
		return err
	}
	defer client.Stop(context.Background())

	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "listening on http://%s\n", ln.Addr())
	srv := &http.Server{Handler: handler(pool, client, payWithin, log), ReadHeaderTimeout: 10 * time.Second}
	defer context.AfterFunc(ctx, func() { srv.Close() })()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// migrate creates the tables and river's, under a lock, as replicas
// starting together would race to.
func migrate(ctx context.Context, pool *pgxpool.Pool) error {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock(hashtext('riverqueue schema'))`); err != nil {
		return err
	}
	defer conn.Exec(context.Background(), `SELECT pg_advisory_unlock(hashtext('riverqueue schema'))`)
	if _, err := conn.Exec(ctx, schema); err != nil {
		return fmt.Errorf("create tables: %w", err)
	}
	migrator, err := rivermigrate.New(riverpgxv5.New(pool), nil)
	if err != nil {
		return err
	}
	if _, err := migrator.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return fmt.Errorf("river's tables: %w", err)
	}
	return nil
}

// cancelArgs is the job that cancels an order at its deadline.
type cancelArgs struct {
	OrderID int64 `json:"order_id"`
}

func (cancelArgs) Kind() string { return "cancel_order" }

type cancelWorker struct {
	river.WorkerDefaults[cancelArgs]
	pool *pgxpool.Pool
}

// Work cancels the order if it is still pending and due, with its
// cancellations row, in one statement: a paid order's job finds nothing
// to do.
func (w *cancelWorker) Work(ctx context.Context, job *river.Job[cancelArgs]) error {
	_, err := w.pool.Exec(ctx, `
		WITH c AS (
			UPDATE orders SET status = 'cancelled', settled_at = now()
			WHERE id = $1 AND status = 'pending' AND deadline <= now()
			RETURNING id, settled_at)
		INSERT INTO cancellations (order_id, cancelled_at, cancelled_by)
		SELECT id, settled_at, 'river' FROM c`, job.Args.OrderID)
	return err
}

// order is an order as the API writes it, the JSON object of
// examples/delayedorder: id, status, deadline, error, each if known.
type order map[string]any

func handler(pool *pgxpool.Pool, client *river.Client[pgx.Tx], payWithin time.Duration, log *slog.Logger) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /orders", func(w http.ResponseWriter, r *http.Request) {
		o, err := place(r.Context(), pool, client, payWithin)
		if err != nil {
			reply(w, log, http.StatusServiceUnavailable, order{"error": err.Error()})
			return
		}
		reply(w, log, http.StatusCreated, o)
	})
	mux.HandleFunc("POST /orders/{id}/pay", func(w http.ResponseWriter, r *http.Request) {
		id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
		if err != nil || id <= 0 {
			reply(w, log, http.StatusBadRequest, order{"error": "order id: want a positive integer"})
			return
		}
		var status string
		err = pool.QueryRow(r.Context(), `
			UPDATE orders SET status = 'paid', settled_at = now() WHERE id = $1 AND status = 'pending'
			RETURNING status`, id).Scan(&status)
		if errors.Is(err, pgx.ErrNoRows) {
			err = pool.QueryRow(r.Context(), `SELECT status FROM orders WHERE id = $1`, id).Scan(&status)
			switch {
			case errors.Is(err, pgx.ErrNoRows):
				reply(w, log, http.StatusNotFound, order{"id": id, "error": "no such order"})
			case err == nil:
				reply(w, log, http.StatusConflict, order{"id": id, "status": status, "error": "order " + status})
			default:
				reply(w, log, http.StatusServiceUnavailable, order{"id": id, "error": err.Error()})
			}
			return
		}
		if err != nil {
			reply(w, log, http.StatusServiceUnavailable, order{"id": id, "error": err.Error()})
			return
		}
		reply(w, log, http.StatusOK, order{"id": id, "status": status})
	})
	return mux
}

// place stores an order and, in the same transaction, its cancellation
// job, scheduled at its deadline.
func place(ctx context.Context, pool *pgxpool.Pool, client *river.Client[pgx.Tx], payWithin time.Duration) (order, error) {
	var (
		id       int64
		status   string
		deadline time.Time
	)
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, `
			INSERT INTO orders (created_at, deadline) VALUES (now(), now() + $1::int8 * interval '1 microsecond')
			RETURNING id, status, deadline`, payWithin.Microseconds()).Scan(&id, &status, &deadline); err != nil {
			return err
		}
		_, err := client.InsertTx(ctx, tx, cancelArgs{OrderID: id}, &river.InsertOpts{ScheduledAt: deadline})
		return err
	})
	return order{"id": id, "status": status, "deadline": deadline}, err
}

func reply(w http.ResponseWriter, log *slog.Logger, code int, o order) {
	if code >= 500 {
		log.Error("request failed", "err", o["error"])
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(o) // the client may be gone: nothing to do then
}
