// The umbrella module: `import Outpost` brings in every client module, and the two packages their
// public API is written in, so that a middleware (HTTPTypes), a custom transport (HTTPTypes) or a
// log handler (Logging) needs no other import and no direct dependency on them.
@_exported public import HTTPTypes
@_exported public import Logging
@_exported public import OutpostAuth
@_exported public import OutpostCallbacks
@_exported public import OutpostCore
@_exported public import OutpostPlugins
