import Foundation

/// The byte layout of an outbox journal: an 8-byte file header, then frames of
/// `[payload length: UInt32 big-endian][CRC-32 of the payload: UInt32 big-endian][payload]`.
///
/// A reader walks the frames once (cost linear in the file's size). The first frame whose length
/// runs past the end of the file, exceeds ``maxPayloadBytes``, or whose checksum does not match ends
/// the readable part: that frame and everything after it is the corrupt tail.
enum OutboxFraming {
    /// `OPOUTBX` and the format version.
    static let header: [UInt8] = Array("OPOUTBX".utf8) + [1]
    /// Length and checksum.
    static let frameOverhead = 8
    /// No single journal record is larger than this (a bound for the reader, too).
    static let maxPayloadBytes = 16 << 20

    /// One framed payload.
    static func frame(_ payload: Data) -> Data {
        var data = Data(capacity: payload.count + frameOverhead)
        append(UInt32(payload.count), to: &data)
        append(CRC32.checksum(payload), to: &data)
        data.append(payload)
        return data
    }

    /// What a read of the whole file found.
    struct Scan {
        /// The intact frames in order: where each starts in the file, and its payload.
        var frames: [(offset: Int, payload: Data)]
        /// Where the intact part ends; `nil` when the whole file is intact.
        var corruptOffset: Int?
        /// Why the bytes from `corruptOffset` on were not read.
        var corruptReason: String?
    }

    /// Splits a journal file into its intact frames and its corrupt tail, if any.
    static func scan(_ data: Data) -> Scan {
        if data.isEmpty { return Scan(frames: []) }
        guard data.count >= header.count, Array(data.prefix(header.count)) == header else {
            return Scan(frames: [], corruptOffset: 0, corruptReason: "the file does not start with the outbox header")
        }
        return scanFrames(data.subdata(in: data.startIndex.advanced(by: header.count)..<data.endIndex), at: header.count)
    }

    /// Splits bytes read from offset `base` of a journal (past its header: what another process
    /// appended since this one last looked) into intact frames and a corrupt tail. Offsets are the
    /// file's, `base` included.
    static func scanFrames(_ data: Data, at base: Int) -> Scan {
        let bytes = [UInt8](data)
        var frames: [(offset: Int, payload: Data)] = []
        var offset = 0
        while offset < bytes.count {
            guard bytes.count - offset >= frameOverhead else {
                return Scan(
                    frames: frames, corruptOffset: base + offset, corruptReason: "a frame header is cut short (torn write)")
            }
            let length = Int(readUInt32(bytes, at: offset))
            let checksum = readUInt32(bytes, at: offset + 4)
            guard length <= maxPayloadBytes else {
                return Scan(frames: frames, corruptOffset: base + offset, corruptReason: "a frame claims \(length) bytes")
            }
            let start = offset + frameOverhead
            guard bytes.count - start >= length else {
                return Scan(frames: frames, corruptOffset: base + offset, corruptReason: "a frame is cut short (torn write)")
            }
            let payload = bytes[start..<(start + length)]
            guard CRC32.checksum(payload) == checksum else {
                return Scan(frames: frames, corruptOffset: base + offset, corruptReason: "a frame's checksum does not match")
            }
            frames.append((base + offset, Data(payload)))
            offset = start + length
        }
        return Scan(frames: frames)
    }

    private static func append(_ value: UInt32, to data: inout Data) {
        withUnsafeBytes(of: value.bigEndian) { data.append(contentsOf: $0) }
    }

    private static func readUInt32(_ bytes: [UInt8], at offset: Int) -> UInt32 {
        bytes[offset..<(offset + 4)].reduce(0) { $0 << 8 | UInt32($1) }
    }
}

/// CRC-32 (IEEE 802.3, the polynomial of zlib and PNG), table driven.
enum CRC32 {
    private static let table: [UInt32] = (0..<256).map { index in
        var value = UInt32(index)
        for _ in 0..<8 { value = value & 1 == 1 ? 0xEDB8_8320 ^ (value >> 1) : value >> 1 }
        return value
    }

    static func checksum<Bytes: Sequence>(_ bytes: Bytes) -> UInt32 where Bytes.Element == UInt8 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes { crc = table[Int((crc ^ UInt32(byte)) & 0xFF)] ^ (crc >> 8) }
        return crc ^ 0xFFFF_FFFF
    }
}
