import Digests
import Testing

/// The digests against published vectors: FIPS 180-2's "abc", RFC 4231's test case 2.
struct DigestsTests {
    @Test func sha256OfABC() {
        #expect(Digests.hex(Digests.sha256(Array("abc".utf8))) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(Digests.hex(Digests.sha256([])) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
    }

    @Test func hmacSHA256OfRFC4231Case2() {
        let mac = Digests.hmacSHA256(key: Array("Jefe".utf8), message: Array("what do ya want for nothing?".utf8))
        #expect(Digests.hex(mac) == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
    }

    @Test func equalInConstantTimeComparesWholeDigests() {
        let a = Digests.sha256(Array("token".utf8))
        var b = a
        #expect(Digests.equalInConstantTime(a, b))
        b[31] ^= 1
        #expect(!Digests.equalInConstantTime(a, b))
        #expect(!Digests.equalInConstantTime(a, Array(a.prefix(16))), "a prefix is not equal")
        #expect(!Digests.equalInConstantTime([], a))
        #expect(Digests.equalInConstantTime([], []))
    }
}
