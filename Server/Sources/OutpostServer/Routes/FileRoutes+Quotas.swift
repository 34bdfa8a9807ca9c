/// The quotas of `/files`: how many bytes of files and how many unfinished uploads one user holds
/// (``ServerConfiguration/quotas``, or the user's own from `outpost users quota`).
struct FileQuotas: Sendable {
    let defaults: Quotas
    /// Where a user's own bounds are kept; `nil` when the storage keeps none (the defaults hold).
    let storage: (any QuotaStorage)?

    /// The bytes `owner` may still add to an upload (whose stored bytes count as pending) and the
    /// bound they come from, or `nil` for no bound. A replacement of the owner's own file of that name counts the old bytes
    /// as freed.
    ///
    /// - Throws: 507 `quota_exceeded` (`pending_uploads`) when the upload is new and the owner holds
    ///   as many unfinished uploads as they may; (`file_bytes`) when no byte fits.
    func allowance(owner: String, files: any FileStorage, newUpload: Bool, replacing existing: StoredFile?) async throws
        -> (remaining: Int64, limit: Int64)?
    {
        guard !owner.isEmpty else { return nil }
        var quotas = defaults
        if let storage { quotas = quotas.applying(try await storage.quotaOverrides(user: owner)) }
        guard quotas.fileBytes != nil || quotas.pendingUploads != nil else { return nil }
        let usage = try await files.usage(owner: owner)
        if newUpload, let bound = quotas.pendingUploads, Int64(usage.pendingUploads) >= bound {
            throw QuotaExceeded.error("pending_uploads", limit: bound)
        }
        guard let bound = quotas.fileBytes else { return nil }
        let freed = existing?.owner == owner ? existing?.size ?? 0 : 0
        return (max(0, bound - usage.fileBytes - usage.pendingBytes + freed), bound)
    }
}

/// An upload passed its owner's quota of file bytes while it arrived.
struct FileQuotaPassed: Error {
    let limit: Int64
}
