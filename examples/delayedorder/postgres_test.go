package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// requirePostgresEnv, set to 1, turns the skip of the PostgreSQL tests
// where no server can be had into a failure: CI sets it.
const requirePostgresEnv = "DELAYEDORDER_REQUIRE_POSTGRES"

// server is the PostgreSQL server of the package's tests: started by
// scripts/postgres.sh on first use, stopped by TestMain.
var server struct {
	once     sync.Once
	dir, url string
	skip     string // why there is none, where none can be had
	err      error  // why starting it failed
	dbs      atomic.Int64
}

// postgresURL returns the URL of a new, empty database on the package's
// server, started if need be. The test is skipped where PostgreSQL cannot
// be installed, unless requirePostgresEnv is set.
func postgresURL(t testing.TB) string {
	t.Helper()
	server.once.Do(startServer)
	switch {
	case server.skip != "" && os.Getenv(requirePostgresEnv) == "1":
		t.Fatalf("no PostgreSQL server, and %s=1: %s", requirePostgresEnv, server.skip)
	case server.skip != "":
		t.Skipf("no PostgreSQL server: %s", server.skip)
	case server.err != nil:
		t.Fatalf("starting PostgreSQL: %v", server.err)
	}
	name := fmt.Sprintf("delayedorder_%d", server.dbs.Add(1))
	conn, err := pgx.Connect(t.Context(), server.url)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	_, err = conn.Exec(t.Context(), "CREATE DATABASE "+name)
	require.NoError(t, err)
	u, err := url.Parse(server.url)
	require.NoError(t, err)
	u.Path = "/" + name
	return u.String()
}

// startServer runs scripts/postgres.sh on a free port, tried three times
// in case another process takes the port first.
func startServer() {
	for range 3 {
		port, err := freePort()
		if err != nil {
			server.err = err
			return
		}
		var stdout, stderr bytes.Buffer
		cmd := exec.Command("bash", "scripts/postgres.sh", "start", fmt.Sprint(port), fmt.Sprint(os.Getpid()))
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err = cmd.Run()
		var exit *exec.ExitError
		switch {
		case errors.As(err, &exit) && exit.ExitCode() == 3:
			server.skip = strings.TrimSpace(stderr.String())
			return
		case err != nil:
			server.err = fmt.Errorf("scripts/postgres.sh: %v\n%s", err, stderr.String())
			continue
		}
		lines := strings.Fields(stdout.String())
		if len(lines) != 2 {
			server.err = fmt.Errorf("scripts/postgres.sh printed %q", stdout.String())
			return
		}
		server.dir, server.url = lines[0], lines[1]
		server.err = createInTemplate(server.url, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
		return
	}
}

// createInTemplate runs a statement in template1, which every database
// the tests create copies.
func createInTemplate(serverURL, sql string) error {
	u, err := url.Parse(serverURL)
	if err != nil {
		return err
	}
	u.Path = "/template1"
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, u.String())
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, sql)
	return err
}

// stopServer stops the server, if one was started, and removes its files.
func stopServer() error {
	if server.dir == "" {
		return nil
	}
	out, err := exec.Command("bash", "scripts/postgres.sh", "stop", server.dir).CombinedOutput()
	if err != nil {
		return fmt.Errorf("stopping PostgreSQL: %v\n%s", err, out)
	}
	return nil
}

// freePort returns a TCP port nothing listens on at the moment.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}
