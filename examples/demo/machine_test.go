package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMachineNamesCPUAndGo(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cpuinfo")
	require.NoError(t, os.WriteFile(path, []byte("processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 7B13\n"), 0o600))
	assert.Equal(t, "AMD EPYC 7B13", cpuModel(path))
	assert.Equal(t, "CPU model unknown", cpuModel(filepath.Join(t.TempDir(), "none")))
	assert.Contains(t, machine(), "GOMAXPROCS")
}
