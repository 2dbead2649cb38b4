// Package wire holds the little-endian reading and UTF-16/GUID helpers
// shared by the binary decoders of this module (ipc, clrevents, nettrace,
// gcdump).
//
// A Cursor reads fixed-size values from a byte slice with a sticky error:
// the first read that does not fit records an *Error (field name, offset,
// bytes needed and left) and every later read returns a zero value, so a
// decoder reads all of its fields and checks the error once. Lengths and
// counts read from the data are checked against what is left before the
// caller allocates (Cursor.Count, Cursor.UTF16N). Each package turns the
// *Error into its own public error type (ipc.ProtocolError,
// clrevents.DecodeError). gcdump reads files through a window that it
// moves over an io.ReaderAt and reads with a Cursor.
//
// DecodeUTF16 converts UTF-16LE bytes to a string with one allocation,
// AppendUTF16 encodes, and FormatGUID/ParseGUID convert Windows GUIDs in
// their wire byte order to and from the canonical text form.
//
// A Builder is the writing side: it appends little-endian fields to a
// byte slice in chained calls (the payloads tests build).
//
// The package has no state and allocates only the strings it returns.
package wire
