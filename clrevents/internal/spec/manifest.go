package spec

import _ "embed" // the manifest files

// Manifest is the trimmed copy of the runtime's ETW manifest
// (ClrEtwAll.trimmed.man: providers, keywords, tasks, opcodes, templates and
// events of dotnet/runtime's src/coreclr/vm/ClrEtwAll.man, made by
// clrevents/internal/gen -trim), from which the generator derives every
// event's name, keywords, task, opcode and field layout per version.
//
//go:embed ClrEtwAll.trimmed.man
var Manifest []byte

// ManifestAdditions holds, in the same schema, what the runtime's manifest
// gained after the commit Manifest was trimmed from (ClrEtwAll.additions.man);
// the generator applies it on top of Manifest.
//
//go:embed ClrEtwAll.additions.man
var ManifestAdditions []byte
