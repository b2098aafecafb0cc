package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// HoldCommand is a shell command the mixed test ran as a hold began: an
// event to measure under load (a vacuum pass, a node restart). The load
// does not wait for it.
type HoldCommand struct {
	Command  string  `json:"command"`
	Started  float64 `json:"started_s"`  // seconds into the hold
	Duration float64 `json:"duration_s"` // until it exited
	ExitCode int     `json:"exit_code"`  // -1: did not run to an exit
	Output   string  `json:"output,omitempty"`
	Error    string  `json:"error,omitempty"`
}

// maxHookOutput bounds the output a HoldCommand keeps.
const maxHookOutput = 4 << 10

// startHoldCommand runs command with sh -c until it exits or ctx ends,
// and delivers the result on the channel.
func startHoldCommand(ctx context.Context, command string, holdStart time.Time) <-chan HoldCommand {
	out := make(chan HoldCommand, 1)
	go func() {
		hc := HoldCommand{Command: command, Started: time.Since(holdStart).Seconds(), ExitCode: -1}
		var buf bytes.Buffer
		cmd := exec.CommandContext(ctx, "sh", "-c", command)
		cmd.Stdout, cmd.Stderr = &buf, &buf
		start := time.Now()
		err := cmd.Run()
		hc.Duration = time.Since(start).Seconds()
		if cmd.ProcessState != nil {
			hc.ExitCode = cmd.ProcessState.ExitCode()
		}
		var exitErr *exec.ExitError
		if err != nil && !errors.As(err, &exitErr) {
			hc.Error = err.Error()
		}
		hc.Output = buf.String()
		if len(hc.Output) > maxHookOutput {
			hc.Output = hc.Output[:maxHookOutput] + "…"
		}
		out <- hc
	}()
	return out
}

// holdCommands is the repeatable --at-hold flag: MULTIPLE=COMMAND.
type holdCommands map[float64]string

func (h holdCommands) String() string {
	var parts []string
	for m, c := range h {
		parts = append(parts, fmt.Sprintf("%g=%s", m, c))
	}
	return strings.Join(parts, "; ")
}

func (h holdCommands) Set(v string) error {
	mult, command, ok := strings.Cut(v, "=")
	m, err := strconv.ParseFloat(strings.TrimSpace(mult), 64)
	if !ok || err != nil || m <= 0 || strings.TrimSpace(command) == "" {
		return fmt.Errorf("want MULTIPLE=COMMAND, e.g. 2='b3 admin vacuum start', got %q", v)
	}
	h[m] = command
	return nil
}
