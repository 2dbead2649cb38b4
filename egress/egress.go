package egress

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode/utf8"
)

// Provider ships artifacts to one destination.
type Provider interface {
	// Name is the provider's configured name (as rules refer to it).
	Name() string
	// Put ships the artifact and says where it went. On failure the error
	// is an *Error.
	Put(ctx context.Context, a Artifact) (Result, error)
}

// Artifact is one file to ship.
type Artifact struct {
	// Name is the file or object name: one path element, see ValidateName.
	Name string
	// ContentType is its media type, e.g. "application/octet-stream";
	// "" leaves the destination's default.
	ContentType string
	// Body is read from offset 0 to Size, as many times as a retry needs.
	// An *os.File or a *bytes.Reader will do.
	Body io.ReaderAt
	// Size is the number of bytes to ship.
	Size int64
	// Metadata is stored with the object where the destination can (S3
	// user metadata, x-amz-meta-*); keys are lower-cased by S3.
	Metadata map[string]string
	// LocalPath is where the artifact stays on this machine, if anywhere:
	// a failed Put says so in its error, and never removes it.
	LocalPath string
}

// Result says where an artifact went.
type Result struct {
	// Provider is the provider's name.
	Provider string
	// Location is where the artifact is: an absolute file path, or
	// s3://bucket/key.
	Location string
	// Size is the number of bytes shipped.
	Size int64
	// ETag is the object's entity tag (S3), without quotes.
	ETag string
}

// File opens the file at path as an Artifact named name (the file's base
// name when name is ""), with LocalPath set to path. Close the returned
// file when the Put is done.
func File(path, name, contentType string) (Artifact, *os.File, error) {
	f, err := os.Open(path)
	if err != nil {
		return Artifact{}, nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return Artifact{}, nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return Artifact{}, nil, fmt.Errorf("egress: %s is not a regular file (%v)", path, fi.Mode().Type())
	}
	if name == "" {
		name = fi.Name()
	}
	return Artifact{Name: name, ContentType: contentType, Body: f, Size: fi.Size(), LocalPath: path}, f, nil
}

// ErrInvalidName is matched (errors.Is) by the error of a Put whose
// artifact name is not one plain path element.
var ErrInvalidName = errors.New("invalid artifact name")

// ValidateName checks that name can name a file or object on every
// provider: not empty, at most 255 bytes of UTF-8, no '/' or '\\', not "."
// or "..", no control characters.
func ValidateName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: empty", ErrInvalidName)
	case len(name) > 255:
		return fmt.Errorf("%w: %d bytes (at most 255)", ErrInvalidName, len(name))
	case name == "." || name == "..":
		return fmt.Errorf("%w: %q", ErrInvalidName, name)
	case !utf8.ValidString(name):
		return fmt.Errorf("%w: %q is not UTF-8", ErrInvalidName, name)
	case strings.ContainsAny(name, `/\`):
		return fmt.Errorf("%w: %q has a path separator (give one path element)", ErrInvalidName, name)
	}
	for _, r := range name {
		if r < 0x20 || r == 0x7f {
			return fmt.Errorf("%w: %q has a control character", ErrInvalidName, name)
		}
	}
	return nil
}

// Error is the error of a failed Put.
type Error struct {
	Provider string // the provider's name
	Artifact string // the artifact's name
	// Destination is where the artifact was going: a file path or
	// s3://bucket/key.
	Destination string
	// LocalPath is where the artifact is kept on this machine ("" when it
	// has no local copy).
	LocalPath string
	// Attempts is how many times the failing request was sent (S3), 0 when
	// not known or not sent.
	Attempts int
	Err      error
}

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "egress %s: %s to %s failed", e.Provider, e.Artifact, e.Destination)
	if e.Attempts > 1 {
		fmt.Fprintf(&b, " after %d attempts", e.Attempts)
	}
	fmt.Fprintf(&b, ": %v", e.Err)
	if e.LocalPath != "" {
		fmt.Fprintf(&b, "; the artifact is kept at %s", e.LocalPath)
	} else {
		b.WriteString("; the artifact has no local copy")
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// ctxReader reads r until ctx is done.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

func checkArtifact(a Artifact) error {
	if err := ValidateName(a.Name); err != nil {
		return err
	}
	if a.Body == nil {
		return errors.New("the artifact has no body")
	}
	if a.Size < 0 {
		return fmt.Errorf("negative size %d", a.Size)
	}
	return nil
}
