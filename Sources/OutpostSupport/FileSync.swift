#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Flushes a file to the disk itself: the one way the client modules make a write durable.
///
/// On Apple platforms `fsync(2)` hands the data to the drive, which may keep it in its own cache
/// and lose it on a power cut; `fcntl(F_FULLFSYNC)` asks the drive to write its cache out. Some
/// file systems (network shares, FAT) refuse `F_FULLFSYNC`; then `fsync` is the best there is, as
/// SQLite does. Elsewhere `fsync` reaches the disk. It blocks its thread.
@_spi(OutpostInternal) public enum FileSync {
    /// Flushes the file (or folder) open as `descriptor`; false when it failed (`errno` says why).
    @discardableResult
    @_spi(OutpostInternal) public static func toDisk(_ descriptor: Int32) -> Bool {
        #if os(macOS) || os(iOS) || os(tvOS) || os(watchOS) || os(visionOS)
            if fcntl(descriptor, F_FULLFSYNC) == 0 { return true }
        #endif
        while fsync(descriptor) != 0 {
            guard errno == EINTR else { return false }
        }
        return true
    }

    /// Flushes the folder at `path`, so that a file created or renamed in it survives a power cut.
    /// Best effort: a folder that cannot be opened (or flushed) is left as it is.
    @_spi(OutpostInternal) public static func folderToDisk(_ path: String) {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return }
        toDisk(descriptor)
        close(descriptor)
    }
}
