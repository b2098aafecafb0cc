package main

import (
	"io"

	"github.com/b3-storage/b3/internal/bench"
)

func runBench(args []string, stdout, stderr io.Writer) int { return bench.Main(args, stdout, stderr) }
