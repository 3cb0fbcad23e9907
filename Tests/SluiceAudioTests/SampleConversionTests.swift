import SluiceAudio
import Testing

@Suite("Sample conversion")
struct SampleConversionTests {
    private func decode(_ bytes: [UInt8], _ format: SampleFormat) -> Float {
        bytes.withUnsafeBytes { SampleConversion.decode($0.baseAddress!, as: format) }
    }

    private func encode(_ sample: Float, _ format: SampleFormat) -> [UInt8] {
        var bytes = [UInt8](repeating: 0xAA, count: format.bytesPerSample)
        bytes.withUnsafeMutableBytes { SampleConversion.encode(sample, as: format, to: $0.baseAddress!) }
        return bytes
    }

    @Test("S16LE extremes decode exactly")
    func s16Extremes() {
        #expect(decode([0x00, 0x80], .s16le) == -1.0)
        #expect(decode([0xFF, 0x7F], .s16le) == 32_767.0 / 32_768.0)
        #expect(decode([0xFF, 0x7F], .s16le) == 0.999969482421875)
        #expect(decode([0x00, 0x00], .s16le) == 0)
        #expect(decode([0x01, 0x00], .s16le) == 1.0 / 32_768.0)
        #expect(decode([0xFF, 0xFF], .s16le) == -1.0 / 32_768.0)
    }

    @Test("S16LE encoding clips and rounds")
    func s16Encoding() {
        #expect(encode(-1.0, .s16le) == [0x00, 0x80])
        #expect(encode(0.999969482421875, .s16le) == [0xFF, 0x7F])
        #expect(encode(1.0, .s16le) == [0xFF, 0x7F])
        #expect(encode(2.5, .s16le) == [0xFF, 0x7F])
        #expect(encode(-7.0, .s16le) == [0x00, 0x80])
        #expect(encode(.infinity, .s16le) == [0xFF, 0x7F])
        #expect(encode(-.infinity, .s16le) == [0x00, 0x80])
        #expect(encode(.nan, .s16le) == [0x00, 0x00])
        // Half a step rounds away from zero.
        #expect(encode(0.5 / 32_768, .s16le) == [0x01, 0x00])
        #expect(encode(-0.5 / 32_768, .s16le) == [0xFF, 0xFF])
    }

    @Test("every S16LE code survives a round trip")
    func s16RoundTrip() {
        var failures = 0
        for code in Int16.min...Int16.max {
            let bytes = withUnsafeBytes(of: code.littleEndian) { Array($0) }
            if encode(decode(bytes, .s16le), .s16le) != bytes { failures += 1 }
        }
        #expect(failures == 0)
    }

    @Test("S24LE extremes, sign extension and round trip")
    func s24() {
        #expect(decode([0x00, 0x00, 0x80], .s24le) == -1.0)
        #expect(decode([0xFF, 0xFF, 0x7F], .s24le) == 8_388_607.0 / 8_388_608.0)
        #expect(decode([0xFF, 0xFF, 0xFF], .s24le) == -1.0 / 8_388_608.0)
        #expect(encode(1.0, .s24le) == [0xFF, 0xFF, 0x7F])
        #expect(encode(-1.0, .s24le) == [0x00, 0x00, 0x80])
        #expect(encode(3.0, .s24le) == [0xFF, 0xFF, 0x7F])
        var failures = 0
        for code in stride(from: -8_388_608, through: 8_388_607, by: 127) {
            let value = UInt32(bitPattern: Int32(code))
            let bytes = [UInt8(value & 0xFF), UInt8((value >> 8) & 0xFF), UInt8((value >> 16) & 0xFF)]
            if encode(decode(bytes, .s24le), .s24le) != bytes { failures += 1 }
        }
        #expect(failures == 0)
    }

    @Test("S32LE extremes and clipping")
    func s32() {
        #expect(decode([0x00, 0x00, 0x00, 0x80], .s32le) == -1.0)
        #expect(decode([0x00, 0x00, 0x00, 0x40], .s32le) == 0.5)
        // 2147483647 / 2^31 rounds to 1.0 in Float32; encoding clips it back to the maximum.
        #expect(encode(1.0, .s32le) == [0xFF, 0xFF, 0xFF, 0x7F])
        #expect(encode(-1.0, .s32le) == [0x00, 0x00, 0x00, 0x80])
        #expect(encode(-1.5, .s32le) == [0x00, 0x00, 0x00, 0x80])
        #expect(encode(0.5, .s32le) == [0x00, 0x00, 0x00, 0x40])
    }

    @Test("F32LE passes bits through without clipping")
    func f32() {
        for value: Float in [0, -1, 1, 1.5, -3.25, .leastNonzeroMagnitude, .greatestFiniteMagnitude] {
            #expect(decode(encode(value, .f32le), .f32le) == value)
        }
        #expect(encode(1.0, .f32le) == [0x00, 0x00, 0x80, 0x3F])
    }

    @Test("buffer conversion equals per-sample conversion", arguments: SampleFormat.allCases)
    func bufferMatchesScalar(format: SampleFormat) {
        let samples: [Float] = [-1, -0.5, -1e-4, 0, 1e-4, 0.25, 0.999, 1]
        var bytes = [UInt8](repeating: 0, count: samples.count * format.bytesPerSample)
        bytes.withUnsafeMutableBytes { raw in
            samples.withUnsafeBufferPointer {
                SampleConversion.encode($0.baseAddress!, samples: samples.count, as: format, into: raw.baseAddress!)
            }
        }
        var decoded = [Float](repeating: .nan, count: samples.count)
        bytes.withUnsafeBytes { raw in
            decoded.withUnsafeMutableBufferPointer {
                SampleConversion.decode(raw.baseAddress!, format: format, samples: samples.count, into: $0.baseAddress!)
            }
        }
        for (index, sample) in samples.enumerated() {
            let single = Array(bytes[(index * format.bytesPerSample)..<((index + 1) * format.bytesPerSample)])
            #expect(single == encode(sample, format))
            #expect(decoded[index] == decode(single, format))
        }
    }
}

@Suite("Audio formats")
struct AudioFormatTests {
    @Test("frame sizes")
    func frameSizes() {
        #expect(PCMFormat(.s16le, channels: 1, sampleRate: 24_000).bytesPerFrame == 2)
        #expect(PCMFormat(.s24le, channels: 2, sampleRate: 48_000).bytesPerFrame == 6)
        #expect(PCMFormat(.s32le, channels: 6, sampleRate: 96_000).bytesPerFrame == 24)
        #expect(PCMFormat(.f32le, channels: 2, sampleRate: 44_100).bytesPerFrame == 8)
    }

    @Test("names parse and print as graph files and errors write them")
    func names() {
        #expect(SampleFormat(name: "S16LE") == .s16le)
        #expect(SampleFormat(name: "f32le") == .f32le)
        #expect(SampleFormat(name: "s16be") == nil)
        #expect(PCMFormat(.s16le, channels: 1, sampleRate: 24_000).description == "S16LE 24000 Hz mono")
        #expect(PCMFormat(.s16le, channels: 2, sampleRate: 24_000).float32.description == "F32LE 24000 Hz stereo")
    }
}

@Suite("Markers")
struct MarkerTests {
    @Test("which markers break continuity")
    func continuity() {
        let id = UtteranceID(3)
        #expect(Marker(position: 0, event: .discontinuity).breaksContinuity)
        #expect(Marker(position: 0, event: .endOfStream).breaksContinuity)
        #expect(!Marker(position: 0, event: .utteranceEnd(id)).breaksContinuity)
        #expect(Marker(position: 0, event: .utteranceEnd(id), isDiscontinuous: true).breaksContinuity)
        #expect(!Marker(position: 0, event: .textSpan(TextSpan(utterance: id, start: 0, end: 4))).breaksContinuity)
    }

    @Test("markers are plain data and move")
    func plainData() {
        #expect(_isPOD(Marker.self))
        let marker = Marker(position: 10, event: .utteranceStart(UtteranceID(1)))
        #expect(marker.moved(to: 20).position == 20)
        #expect(marker.moved(to: 20).event == marker.event)
    }

    @Test("a batch holds four markers in order")
    func batch() {
        var batch = MarkerBatch()
        for position in 0..<4 { batch.append(Marker(position: position, event: .discontinuity)) }
        #expect(batch.count == 4)
        #expect((0..<4).map { batch[$0].position } == [0, 1, 2, 3])
        batch.removeAll()
        #expect(batch.isEmpty)
    }
}
