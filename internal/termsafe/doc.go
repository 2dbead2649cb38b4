// Package termsafe makes text that comes from a target process or a trace
// file safe to print on a terminal.
//
// Process names, command lines, environment variables, method, module and
// type names, provider, event and counter names are chosen by whoever wrote
// the target or the trace. Printed raw, an ESC sequence in a method name can
// clear the screen, retitle the window, rewrite earlier lines or, on some
// terminals, answer back as if typed; a newline can forge an output line; a
// right-to-left override can make text read differently than it is.
//
// String escapes every such character and leaves the rest as it is:
//
//   - C0 controls and DEL: \n, \r, \t, or \xNN;
//   - C1 controls (U+0080-U+009F, which some terminals obey as 8-bit
//     sequences) and Unicode format characters that reorder or hide text
//     (bidirectional embeddings, overrides and isolates, zero-width
//     characters, line and paragraph separators, the BOM): \uNNNN;
//   - bytes that are not valid UTF-8: \xNN.
//
// A backslash is kept as is, so a Windows path stays readable; the output is
// meant for eyes, not to be unescaped. Lines does the same but keeps \n and
// \t, for multi-line messages. Printable text, other scripts and emoji are
// unchanged, and text with nothing to escape is returned without copying.
//
// JSON written by encoding/json escapes C0 controls and U+2028/U+2029 and
// replaces invalid UTF-8, but leaves DEL, C1 controls and bidirectional
// controls raw; JSON rewrites those inside an encoded document as \uNNNN
// escapes, which decode to the same strings.
//
// Use one of them on every field from a target or a trace that reaches a
// terminal; the package has no state.
package termsafe
