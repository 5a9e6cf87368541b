// Notification sounds, drawn with the Web Audio API (no sound files to ship): each of
// Zulip's sound names is a short pattern of tones. The last sound played is noted on
// <body data-last-sound>, which is how a test (or a curious person) can tell it played.

const PATTERNS = {
  zulip: [[880, 0.09], [1320, 0.14]],
  chime: [[1046, 0.12], [1318, 0.12], [1568, 0.2]],
  ding: [[1568, 0.25]],
  ping: [[2093, 0.08]],
  bell: [[660, 0.35]],
  beep: [[1000, 0.1], [0, 0.05], [1000, 0.1]],
  swoosh: [[400, 0.06], [700, 0.06], [1000, 0.08]],
  knock: [[180, 0.05], [0, 0.07], [180, 0.05]],
};

let context = null;

export function play(name) {
  const pattern = PATTERNS[name];
  if (!pattern) return;
  document.body.dataset.lastSound = name;
  try {
    context = context || new AudioContext();
  } catch {
    return; // no audio output
  }
  let at = context.currentTime;
  for (const [frequency, seconds] of pattern) {
    if (frequency) {
      const oscillator = context.createOscillator();
      const gain = context.createGain();
      oscillator.frequency.value = frequency;
      gain.gain.setValueAtTime(0.2, at);
      gain.gain.exponentialRampToValueAtTime(0.001, at + seconds);
      oscillator.connect(gain).connect(context.destination);
      oscillator.start(at);
      oscillator.stop(at + seconds);
    }
    at += seconds;
  }
}
