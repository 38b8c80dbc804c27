// A design study (issue #61): WebRTC's AEC3 (Debian 13's libwebrtc-audio-processing-1) over a room set's
// microphone, to set beside the speaker's speexdsp canceller. Not part of the product.
//
//   aec3_run MIC.wav REF.wav OUT.wav [LINEAR.wav]
//
// MIC and REF: 16 kHz mono, sample-aligned as tools/bench/aec_room writes them (REF is what was played, MIC what
// the microphone heard). OUT: the whole capture path's output (linear filter and residual suppression); LINEAR: the
// linear filter's output alone, as the speaker's detector hears speexdsp's filter. Both as long as MIC.
#include <api/audio/echo_canceller3_config.h>
#include <api/audio/echo_control.h>
#include <modules/audio_processing/include/audio_processing.h>
#include <sndfile.h>

#include <new>

#include <array>
#include <cstdio>
#include <memory>
#include <vector>

// Debian's package (1.3) does not export AEC3's linear output through its own configuration (APM's
// export_linear_aec_output without AEC3's filter.export_linear_aec_output crashes in BlockFramer), nor ships the
// factory that takes an EchoCanceller3Config. For the study only: AEC3's constructor, exported by the library, called
// on storage larger than the object (its only base is EchoControl, so the addresses agree). Never in the product.
namespace webrtc {
class EchoCanceller3 {
 public:
  EchoCanceller3(const EchoCanceller3Config& config, int sample_rate_hz, size_t num_render_channels,
                 size_t num_capture_channels);
};
}  // namespace webrtc

namespace {

class LinearFactory : public webrtc::EchoControlFactory {
 public:
  std::unique_ptr<webrtc::EchoControl> Create(int rate, int render, int capture) override {
    webrtc::EchoCanceller3Config config;
    config.filter.export_linear_aec_output = true;
    void* storage = ::operator new(1 << 20);
    new (storage) webrtc::EchoCanceller3(config, rate, render, capture);
    return std::unique_ptr<webrtc::EchoControl>(static_cast<webrtc::EchoControl*>(storage));
  }
};

std::vector<short> readMono(const char* path) {
    SF_INFO info{};
    SNDFILE* f = sf_open(path, SFM_READ, &info);
    if (!f) { std::fprintf(stderr, "%s: %s\n", path, sf_strerror(nullptr)); std::exit(1); }
    if (info.channels != 1 || info.samplerate != 16000) {
        std::fprintf(stderr, "%s: %d channels at %d Hz, not mono 16 kHz\n", path, info.channels, info.samplerate);
        std::exit(1);
    }
    std::vector<short> x(info.frames);
    sf_read_short(f, x.data(), info.frames);
    sf_close(f);
    return x;
}

void writeMono(const char* path, const std::vector<short>& x) {
    SF_INFO info{};
    info.samplerate = 16000;
    info.channels = 1;
    info.format = SF_FORMAT_WAV | SF_FORMAT_PCM_16;
    SNDFILE* f = sf_open(path, SFM_WRITE, &info);
    if (!f) { std::fprintf(stderr, "%s: %s\n", path, sf_strerror(nullptr)); std::exit(1); }
    sf_write_short(f, x.data(), x.size());
    sf_close(f);
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 4) { std::fprintf(stderr, "usage: aec3_run MIC.wav REF.wav OUT.wav [LINEAR.wav]\n"); return 2; }
    const auto mic = readMono(argv[1]);
    const auto ref = readMono(argv[2]);
    const bool linear = argc > 4;

    webrtc::AudioProcessingBuilder builder;
    if (linear) builder.SetEchoControlFactory(std::make_unique<LinearFactory>());
    std::unique_ptr<webrtc::AudioProcessing> apm(builder.Create());
    webrtc::AudioProcessing::Config config;
    config.echo_canceller.enabled = true;
    config.echo_canceller.mobile_mode = false;
    config.echo_canceller.export_linear_aec_output = linear;
    config.high_pass_filter.enabled = true;
    config.noise_suppression.enabled = false;
    config.gain_controller1.enabled = false;
    config.gain_controller2.enabled = false;
    apm->ApplyConfig(config);

    const webrtc::StreamConfig stream(16000, 1);
    constexpr size_t frame = 160;
    std::vector<short> out(mic.size(), 0), lin(linear ? mic.size() : 0, 0);
    std::array<short, frame> render{}, capture{}, scratch{};
    std::array<std::array<float, 160>, 1> linearFrame{};
    for (size_t p = 0; p + frame <= mic.size(); p += frame) {
        for (size_t i = 0; i < frame; ++i) render[i] = p + i < ref.size() ? ref[p + i] : 0;
        apm->ProcessReverseStream(render.data(), stream, stream, scratch.data());
        apm->set_stream_delay_ms(0);
        std::copy(mic.begin() + p, mic.begin() + p + frame, capture.begin());
        if (apm->ProcessStream(capture.data(), stream, stream, capture.data()) != 0) {
            std::fprintf(stderr, "ProcessStream failed at sample %zu\n", p);
            return 1;
        }
        std::copy(capture.begin(), capture.end(), out.begin() + p);
        if (linear && apm->GetLinearAecOutput(linearFrame)) {
            for (size_t i = 0; i < frame; ++i) {
                float v = linearFrame[0][i];  // in the int16 range
                lin[p + i] = static_cast<short>(v > 32767.f ? 32767.f : v < -32768.f ? -32768.f : v);
            }
        }
    }
    writeMono(argv[3], out);
    if (linear) writeMono(argv[4], lin);
    return 0;
}
