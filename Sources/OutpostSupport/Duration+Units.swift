/// The conversions of `Duration` that Foundation, logs and transports need, written once.
extension Duration {
    /// The duration in seconds, fractions included: for `TimeInterval` and `Date` arithmetic.
    @_spi(OutpostInternal) public var inSeconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }

    /// The whole milliseconds (rounded toward zero): for log fields such as `duration_ms`.
    @_spi(OutpostInternal) public var inMilliseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }

    /// The whole nanoseconds (rounded toward zero): for APIs that count time in nanoseconds.
    @_spi(OutpostInternal) public var inNanoseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}
