// Command mrcgen turns the description of an MRC AI-training fabric into
// everything its dataplane needs, pushes it to the switches, and proves on
// BMv2 that it works. See README.md.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
