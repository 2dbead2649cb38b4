package eventpipe

import (
	"context"
	"io"
	"sync"
)

// A Consumer reads a session's stream while Session.DrainDecode collects
// it: r gives the bytes as they arrive and ends when the stream does (with
// Drain's error, or io.EOF). stop ends the collection with a reason
// (StopEvent when the consumer saw the event it waited for); it never
// blocks, and the first reason asked for by anyone wins. A consumer need
// not read to the end: what it leaves is discarded. Its error becomes
// DrainResult.DecodeErr; damage (IsDamage) stops the session at once,
// with StopDamaged.
type Consumer func(r io.Reader, stop func(StopReason)) error

// DrainDecode is Drain with a consumer decoding the stream as it arrives:
// counting events, building a profile, watching for a stopping event. It
// returns once both are done.
//
// When out is a *Spool, the stream is written to it and the consumer
// follows the spool's file (a reader made before the first byte, so a
// ring spool waits for it); the copy never waits for a slow consumer
// otherwise, and DrainDecode finishes the spool before it waits for the
// consumer. Any other out (or nil, for the consumer alone) gets the stream
// through a pipe: the copy then goes at the consumer's pace until the
// consumer returns.
//
// cfg.Stop still works: its reason is passed on, and the first reason
// from it or from the consumer ends the collection. Everything else is as
// in Drain: the bounds, the rundown, the DrainResult and the error.
func (s *Session) DrainDecode(ctx context.Context, out io.Writer, cfg DrainConfig, consume Consumer) (DrainResult, error) {
	stop := make(chan StopReason, 1)
	request := func(r StopReason) {
		select {
		case stop <- r:
		default:
		}
	}
	drained := make(chan struct{})
	var forward sync.WaitGroup
	if cfg.Stop != nil {
		forward.Add(1)
		go func(from <-chan StopReason) {
			defer forward.Done()
			select {
			case r := <-from:
				request(r)
			case <-drained:
			}
		}(cfg.Stop)
	}
	cfg.Stop = stop

	decoded := make(chan error, 1)
	run := func(r io.Reader) error {
		err := consume(r, request)
		if IsDamage(err) {
			request(StopDamaged)
		}
		return err
	}
	var res DrainResult
	var err error
	if spool, ok := out.(*Spool); ok {
		rd := spool.NewReader()
		go func() {
			defer rd.Close()
			decoded <- run(rd)
		}()
		res, err = s.Drain(ctx, spool, cfg)
		spool.Finish(nil)
	} else {
		pr, pw := io.Pipe()
		go func() {
			err := run(pr)
			// Read on, so that the copy never waits for a consumer
			// that is done.
			_, _ = io.Copy(io.Discard, pr)
			decoded <- err
		}()
		w := io.Writer(pw)
		if out != nil {
			w = io.MultiWriter(out, pw)
		}
		res, err = s.Drain(ctx, w, cfg)
		pw.CloseWithError(err)
	}
	close(drained)
	forward.Wait()
	res.DecodeErr = <-decoded
	return res, err
}
