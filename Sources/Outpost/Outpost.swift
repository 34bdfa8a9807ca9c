// The umbrella module: `import Outpost` brings in every client module.
@_exported public import OutpostAuth
@_exported public import OutpostCallbacks
@_exported public import OutpostCore
@_exported public import OutpostPlugins
