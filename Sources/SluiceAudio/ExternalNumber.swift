/// Numbers that arrive from outside — an OSC argument, a JSON field, the speechd protocol, a
/// provider's message, a graph file — become integers only through these.
///
/// `Int(someDouble)` traps on NaN, on the infinities and on anything beyond ±2^63: one packet
/// with `1e300` in it would end the process. Each function here checks first and answers nil
/// (or clamps) instead.
public enum ExternalNumber {
    /// `value` as a whole number within `range`; nil when it is NaN, infinite, has a fraction,
    /// or lies outside `range`.
    public static func wholeNumber(_ value: Double, in range: ClosedRange<Int> = Int.min...Int.max) -> Int? {
        // -2^63 is exactly representable and the smallest Int; 2^63 is one past Int.max.
        guard value.isFinite, value == value.rounded(), value >= -0x1p63, value < 0x1p63 else { return nil }
        let whole = Int(value)
        return range.contains(whole) ? whole : nil
    }

    /// `value` rounded to the nearest whole number and clamped into `range`; nil for NaN.
    /// For numbers that only place something (a mark's frame, a gain step) and may be pinned
    /// to the nearest valid place.
    public static func clamped(_ value: Double, to range: ClosedRange<Int>) -> Int? {
        guard !value.isNaN else { return nil }
        if value <= Double(range.lowerBound) { return range.lowerBound }
        if value >= Double(range.upperBound) { return range.upperBound }
        // Between two Ints here, so the conversion cannot trap; the clamp again covers the
        // rounding of a bound beyond 2^53 to the nearest Double.
        return min(max(Int(value.rounded()), range.lowerBound), range.upperBound)
    }

    /// `value` as text: a whole number without a fraction ("3", not "3.0") while it is one
    /// that prints exactly, otherwise Swift's shortest round-tripping form ("0.25", "1e+300",
    /// "nan").
    public static func text(_ value: Double) -> String {
        if let whole = wholeNumber(value, in: -999_999_999_999_999...999_999_999_999_999) { return String(whole) }
        return String(value)
    }
}
