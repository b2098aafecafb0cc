package iolimit

import (
	"context"
	"fmt"
)

// Priority says whose I/O a call is for.
type Priority int

const (
	// Foreground is I/O a client is waiting for. It is the default.
	Foreground Priority = iota
	// Background is I/O nobody waits for: vacuum, replication catch-up,
	// scrubbing. It gets only what foreground leaves.
	Background

	numPriorities = 2
)

// String returns "foreground" or "background" (a metrics label).
func (p Priority) String() string {
	switch p {
	case Foreground:
		return "foreground"
	case Background:
		return "background"
	}
	return fmt.Sprintf("Priority(%d)", int(p))
}

type priorityKey struct{}

// WithPriority returns a context whose I/O is done at priority p.
func WithPriority(ctx context.Context, p Priority) context.Context {
	return context.WithValue(ctx, priorityKey{}, p)
}

// PriorityFrom returns the priority set by WithPriority, or Foreground.
func PriorityFrom(ctx context.Context) Priority {
	if p, ok := ctx.Value(priorityKey{}).(Priority); ok {
		return p
	}
	return Foreground
}

// Direction is the direction of a disk transfer.
type Direction int

const (
	Read Direction = iota
	Write

	numDirections = 2
)

// String returns "read" or "write" (a metrics label).
func (d Direction) String() string {
	switch d {
	case Read:
		return "read"
	case Write:
		return "write"
	}
	return fmt.Sprintf("Direction(%d)", int(d))
}
