/// JSON Merge Patch (RFC 7396): compute the patch between two JSON documents, and apply one.
///
/// ```swift
/// let patch = MergePatch.diff(from: ["a": "b", "c": ["d": "e", "f": "g"]],
///                             to:   ["a": "z", "c": ["d": "e"]])
/// // {"a": "z", "c": {"f": null}}
/// MergePatch.apply(patch, to: original) == updated   // true
/// ```
///
/// Objects are compared key by key and recursively; a key that disappeared becomes `null`; any
/// other change (arrays included) replaces the value whole. Merge patches cannot set a value to
/// JSON `null` (a `null` removes the key), a limit of the format.
public enum MergePatch {
    /// The media type of a merge patch request body.
    public static let contentType = "application/merge-patch+json"

    /// The merge patch that turns `original` into `updated`.
    ///
    /// Equal objects give the empty patch `{}`. When `updated` is not an object, the patch is
    /// `updated` itself (it replaces the target whole).
    public static func diff(from original: JSONValue, to updated: JSONValue) -> JSONValue {
        guard case .object(let old) = original, case .object(let new) = updated else { return updated }
        return .object(diffObjects(old, new))
    }

    /// Whether `patch` changes nothing (it is the empty object).
    public static func isEmpty(_ patch: JSONValue) -> Bool {
        patch == .object([:])
    }

    /// Applies `patch` to `target` as RFC 7396, section 2, describes.
    public static func apply(_ patch: JSONValue, to target: JSONValue) -> JSONValue {
        guard case .object(let changes) = patch else { return patch }
        var result: [String: JSONValue]
        if case .object(let object) = target { result = object } else { result = [:] }
        for (key, value) in changes {
            if value == .null {
                result.removeValue(forKey: key)
            } else {
                result[key] = apply(value, to: result[key] ?? .null)
            }
        }
        return .object(result)
    }

    private static func diffObjects(_ old: [String: JSONValue], _ new: [String: JSONValue]) -> [String: JSONValue] {
        var patch: [String: JSONValue] = [:]
        for key in old.keys where new[key] == nil {
            patch[key] = .null
        }
        for (key, newValue) in new {
            guard let oldValue = old[key] else {
                // A new null would mean "remove" in a patch; absent and null read the same, so skip it.
                if newValue != .null { patch[key] = newValue }
                continue
            }
            guard oldValue != newValue else { continue }
            if case .object(let oldObject) = oldValue, case .object(let newObject) = newValue {
                let nested = diffObjects(oldObject, newObject)
                if !nested.isEmpty { patch[key] = .object(nested) }
            } else {
                patch[key] = newValue
            }
        }
        return patch
    }
}
