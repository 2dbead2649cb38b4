// Package eventpipe configures and runs EventPipe sessions in a .NET
// process: providers and their dotnet-trace syntax, profiles, the
// --clrevents keyword map and rundown options, composed into a Plan.
//
// Parsing follows dotnet-trace exactly so that command lines carry over:
//
//	plan, err := eventpipe.Compose(eventpipe.Request{
//		Providers: "Microsoft-Windows-DotNETRuntime:0x8001:5,MyEventSource",
//		Profiles:  []string{"dotnet-sampled-thread-time"},
//	})
//
// Keywords are hexadecimal, levels numbers or names, duplicate providers
// are merged (keywords OR'd, most verbose level wins) and explicit
// providers take precedence over those of a profile.
//
// All functions are safe for concurrent use; no package state is mutable.
package eventpipe
