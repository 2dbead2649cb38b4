// Package ctxio makes readers that take no context.Context stop when one
// ends: Cancelable and Interruptible wrap an io.Reader (a decoder reading
// a file or standard input), ReaderAt an io.ReaderAt. A regular file is
// read as it is, with the context checked before each Read; anything that
// may block (a pipe, a terminal) is read ahead by a goroutine, so that a
// Read returns the context's error at once even while the source blocks.
//
// The package has no package-level mutable state.
package ctxio
