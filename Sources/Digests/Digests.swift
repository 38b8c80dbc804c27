import CCrypto

/// The digests the speaker uses, from OpenSSL's libcrypto (the one place that calls it): request signing
/// (Houndify's HMAC-SHA256, the device ID), the control API's token check, the negative bank's checksum.
public enum Digests {
    /// SHA-256 of `bytes` (32 bytes).
    public static func sha256(_ bytes: [UInt8]) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: Int(SHA256_DIGEST_LENGTH))
        bytes.withUnsafeBufferPointer { input in
            digest.withUnsafeMutableBufferPointer { output in _ = SHA256(input.baseAddress, input.count, output.baseAddress) }
        }
        return digest
    }

    /// HMAC-SHA256 of `message` keyed with `key` (32 bytes).
    public static func hmacSHA256(key: [UInt8], message: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        let ok = key.withUnsafeBytes { k in
            message.withUnsafeBytes { m in
                HMAC(EVP_sha256(), k.baseAddress, Int32(k.count), m.baseAddress?.assumingMemoryBound(to: UInt8.self),
                     m.count, &out, &length)
            }
        }
        // HMAC fails only on allocation failure inside OpenSSL; nothing sensible remains to do then.
        precondition(ok != nil, "OpenSSL HMAC-SHA256 failed")
        return Array(out.prefix(Int(length)))
    }

    /// Whether two digests are equal, in a time that says nothing about where they differ (OpenSSL's
    /// CRYPTO_memcmp); digests of different lengths are unequal.
    public static func equalInConstantTime(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        a.count == b.count && a.withUnsafeBytes { x in b.withUnsafeBytes { y in CRYPTO_memcmp(x.baseAddress, y.baseAddress, a.count) == 0 } }
    }

    /// Lower-case hexadecimal, two digits a byte.
    public static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(bytes.count * 2)
        for b in bytes { text += [digits[Int(b >> 4)], digits[Int(b & 15)]] }
        return String(decoding: text, as: UTF8.self)
    }
}
