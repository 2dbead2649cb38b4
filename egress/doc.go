// Package egress ships the artifacts clrdiag produces (traces, dumps,
// gcdumps, logs) to where a team keeps them: a directory (FileSystem) or
// S3-compatible object storage (S3). A Provider takes one Artifact (a name,
// a content type, a body that can be read again from the start, its size
// and metadata) and answers a Result that says where the artifact now is.
//
// The rules every provider keeps:
//
//   - The artifact's name is one path element, made by clrdiag (never
//     taken from a request); ValidateName refuses separators, "." and
//     "..", control characters and names over 255 bytes.
//   - FileSystem writes only inside its directory, through an os.Root, into
//     a private temporary file (0600) that is linked to the final name once
//     complete: a reader never sees half an artifact, an existing file or
//     symbolic link at the name is refused (never followed or replaced),
//     and no link can lead the write out of the directory.
//   - S3 signs every request (SigV4), uploads an artifact above its part
//     size in parts (multipart, aborted on failure), and retries each
//     request with exponential backoff and jitter.
//   - A failure is an *Error naming the provider, the destination, the
//     cause and, when the artifact has a local copy (Artifact.LocalPath),
//     where that copy is kept: a failed upload never removes it.
//
// Everything that blocks takes a context.Context; cancelling it stops the
// copy or the upload (a multipart upload is aborted). The package has no
// package-level state.
package egress
