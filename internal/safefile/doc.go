// Package safefile creates the files clrdiag writes (traces, converted
// profiles, counter files) and checks those the target writes for it
// (dumps), so that a name planted in a shared directory cannot redirect
// them.
//
// The rule, the same for every command:
//
//   - An output path that already exists is refused (O_CREAT|O_EXCL, which
//     also refuses a symbolic link, dangling or not): clrdiag never writes
//     through a link or into a file someone else prepared, which, for a
//     clrdiag run as root, could overwrite any file or hand a dump to whoever
//     made the file.
//   - With Overwrite (the commands' --force), an existing regular file or
//     link is removed first (a link is removed, not followed) and a new
//     file is created the same way; a directory is never removed. A
//     device or FIFO, or a link to one (/dev/null, /dev/stdout, a named
//     pipe), is written into as a shell's > would and never removed:
//     clrdiag run as root must not replace /dev/null with a file.
//   - Files that may hold secrets (traces, dumps, gcdumps, IPC recordings)
//     are created mode 0600; others 0644, less the umask.
//
// A dump is written by the runtime itself, which opens the path it is given
// as it likes. Prepare applies the rule to the path before the request, and
// Seal, after it, checks that what is there is a regular file (not a link)
// and sets it to 0600 through a descriptor opened without following links.
// Between the two, whoever can write the directory could still swap the
// file: give dump directories that only their owner can write.
//
// The package has no state.
package safefile
