package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"time"
)

// shopHandler serves the shop's API, as one replica behind a load
// balancer:
//
//	POST /orders            place an order: 201 and the order
//	POST /orders/{id}/pay   pay it: 200 and the order; 409 and the order if
//	                        it is cancelled (refund) or paid already; 404
//
// An order is JSON: {"id": 1, "status": "pending", "deadline": "…"}.
func shopHandler(svc *Service, c *counter, log *slog.Logger) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /orders", func(w http.ResponseWriter, r *http.Request) {
		o, err := svc.Place(r.Context())
		if err != nil {
			reply(w, log, http.StatusServiceUnavailable, o, err)
			return
		}
		c.placed(o.ID)
		reply(w, log, http.StatusCreated, o, nil)
	})
	mux.HandleFunc("POST /orders/{id}/pay", func(w http.ResponseWriter, r *http.Request) {
		id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
		if err != nil || id <= 0 {
			reply(w, log, http.StatusBadRequest, Order{}, fmt.Errorf("order id %q: want a positive integer", r.PathValue("id")))
			return
		}
		o, err := svc.Pay(r.Context(), id)
		c.paid(id, err)
		switch {
		case err == nil:
			reply(w, log, http.StatusOK, o, nil)
		case errors.Is(err, ErrOrderCancelled), errors.Is(err, ErrAlreadyPaid):
			reply(w, log, http.StatusConflict, o, err)
		case errors.Is(err, ErrNotFound):
			reply(w, log, http.StatusNotFound, o, err)
		default:
			reply(w, log, http.StatusServiceUnavailable, o, err)
		}
	})
	return mux
}

// orderJSON is an order as the API writes it.
type orderJSON struct {
	ID       int64      `json:"id,omitempty"`
	Status   Status     `json:"status,omitempty"`
	Deadline *time.Time `json:"deadline,omitempty"`
	Error    string     `json:"error,omitempty"`
}

func reply(w http.ResponseWriter, log *slog.Logger, code int, o Order, err error) {
	body := orderJSON{ID: o.ID, Status: o.Status}
	if !o.Deadline.IsZero() {
		body.Deadline = &o.Deadline
	}
	if err != nil {
		body.Error = err.Error()
		if code >= 500 {
			log.Error("request failed", "err", err)
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(body) // the client may be gone: nothing to do then
}

// serve serves h on addr until ctx ends, then lets the requests in flight
// finish. It prints the address it listens on, for a port chosen by the
// system (addr ":0").
func serve(ctx context.Context, addr string, h http.Handler, out io.Writer) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "listening on http://%s\n", ln.Addr())
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = srv.Shutdown(shutdown)
	<-served
	return err
}
