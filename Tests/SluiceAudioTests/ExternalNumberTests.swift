import SluiceAudio
import Testing

@Suite struct ExternalNumberTests {
    @Test("a whole number inside the range, and nil for every extreme, fraction or value outside it")
    func wholeNumbers() {
        #expect(ExternalNumber.wholeNumber(0) == 0)
        #expect(ExternalNumber.wholeNumber(-0.0) == 0)
        #expect(ExternalNumber.wholeNumber(96_000, in: 0...100_000) == 96_000)
        #expect(ExternalNumber.wholeNumber(-0x1p63) == Int.min)
        for value in [0.5, -1, 100_001, 0x1p63, -0x1p64, 1e300, -1e300, .infinity, -.infinity, .nan, Double(Int.max)] {
            #expect(ExternalNumber.wholeNumber(value, in: 0...100_000) == nil, "\(value)")
        }
        #expect(ExternalNumber.wholeNumber(0x1p63) == nil, "2^63 is one past Int.max")
    }

    @Test("clamped: rounded into the range, the extremes pinned to its ends, NaN refused")
    func clamped() {
        #expect(ExternalNumber.clamped(2.5, to: 0...10) == 3)
        #expect(ExternalNumber.clamped(-2.4, to: -10...10) == -2)
        #expect(ExternalNumber.clamped(1e300, to: 0...10) == 10)
        #expect(ExternalNumber.clamped(-1e300, to: 0...10) == 0)
        #expect(ExternalNumber.clamped(.infinity, to: 0...10) == 10)
        #expect(ExternalNumber.clamped(-.infinity, to: 0...10) == 0)
        #expect(ExternalNumber.clamped(.nan, to: 0...10) == nil)
        #expect(ExternalNumber.clamped(0x1p63, to: Int.min...Int.max) == Int.max)
        #expect(ExternalNumber.clamped(-0x1p70, to: Int.min...Int.max) == Int.min)
    }

    @Test("text: whole numbers without a fraction, the rest as Swift prints them")
    func text() {
        #expect(ExternalNumber.text(3) == "3")
        #expect(ExternalNumber.text(-0.0) == "0")
        #expect(ExternalNumber.text(0.25) == "0.25")
        #expect(ExternalNumber.text(1e300) == "1e+300")
        #expect(ExternalNumber.text(.nan) == "nan")
        #expect(ExternalNumber.text(.infinity) == "inf")
    }
}
