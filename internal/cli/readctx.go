package cli

import (
	"context"
	"errors"
	"fmt"
)

// interruptedError is the error of a file command cut short by a signal:
// exitInterrupted, with what was done so far.
func interruptedError(ctx context.Context, name string, err error) error {
	if ctx == nil || ctx.Err() == nil || !(errors.Is(err, context.Canceled) || errors.Is(err, ctx.Err())) {
		return nil
	}
	return &ExitError{Code: exitInterrupted, Err: fmt.Errorf("%s: interrupted before the end of the trace", name)}
}
