// The built-in prompt set of `strata gate`: one prompt each of chat, code and arithmetic, and a long text that
// spans many prefill windows (cut to what the context holds, so it fits any launch).
#include <cstdint>

#include "strata/gate.hpp"

namespace strata::gate {
namespace {

// Written for this test set: varied words, numbers, punctuation and line breaks, about 900 words.
const char* const kLongText =
    "The harbour ledger of Calloway Point, kept from the spring of 1911 until the light was automated, runs to "
    "eleven volumes. Most entries are short. A keeper wrote the wind, the state of the sea, the ships that "
    "passed and anything that had broken, and then he signed his initials. Read one after another, though, the "
    "entries make a slow and oddly gripping story about people who measured their lives in lamp oil and weather.\n\n"
    "The first keeper, Ansel Moberly, wrote in a small square hand and never wasted a line. \"Wind NW, fresh. "
    "Sea moderate. Schooner Hesper inbound 06:40, coal. Cleaned lens. Wick trimmed twice.\" On days when nothing "
    "happened he still wrote the wind and the sea, because the inspector who visited every March counted the "
    "entries and complained about gaps. In 1913 the inspector noted that the brass was \"satisfactory but not "
    "bright\", and Moberly spent most of April polishing it; the ledger for that month mentions polish on "
    "nineteen separate days.\n\n"
    "Moberly's assistant was his niece, Ruth, who was fourteen when she arrived and twenty-six when she took "
    "over the station. Her entries are longer. She counted things: 214 gulls on the north rocks on a calm "
    "morning, 3 seals, 1 fishing boat with a torn sail. She also recorded the price of everything that came out "
    "on the supply boat, so the ledger doubles as a record of what a gallon of paraffin cost (9 pence in 1914, "
    "more than double that by 1920) and how long a sack of flour lasted two people in winter (about five weeks, "
    "less if the weather kept the boat away and she baked to keep warm).\n\n"
    "The worst storm in the ledger came in the second week of January 1925. For four days the entries are "
    "fragments. \"Glass falling fast. Shutters on the seaward side.\" Then: \"Green water over the gallery at "
    "high tide. Lamp kept lit.\" Then nothing for a day, and then, in a steadier hand: \"Storm passed. Lost the "
    "boat, the hen house and the lower half of the garden wall. Lens intact. Light shown every night.\" The "
    "last sentence is underlined twice. Ruth later told a newspaper that she had sat on the stairs below the "
    "lamp room for most of two nights, climbing up every hour to check the flame, because the wind was loud "
    "enough that she could not trust herself to hear anything go wrong.\n\n"
    "Not every entry is about danger. In the summer the point filled with visitors who walked out along the "
    "causeway at low tide, and the keepers were expected to show them the lamp. Ruth kept a tally of visitors "
    "in the margin, in groups of five, and the tallies grow every year through the 1930s: 340, 412, 509, and "
    "then 733 in the summer a railway halt opened at the village. She did not enjoy the crowds. \"Party of "
    "twelve from the city. One gentleman asked whether the light ran on electricity. Told him it ran on "
    "paraffin and patience.\" A later hand has added, in pencil, \"Still does.\"\n\n"
    "There are practical lessons scattered through the volumes as well. A cracked chimney glass should be "
    "changed at once and not nursed through the night, because a glass that fails at 3 a.m. fails all at once. "
    "Rainwater from the roof is good for washing but must be boiled for drinking after a gale, when salt spray "
    "gets into the cistern. A clock that loses two minutes a day is worse than useless for timing the flashes, "
    "and the keepers wound and checked theirs against the noon gun from the fort across the bay whenever the "
    "wind carried the sound.\n\n"
    "The light itself changed three times. The original fixed white lamp was replaced in 1931 by a rotating "
    "lens that gave two white flashes every fifteen seconds, so that ships could tell Calloway Point from the "
    "lights on either side of it. The clockwork that turned the lens had to be wound by hand every three hours; "
    "Ruth's entries from that year complain about the new routine more than about any storm. In 1952 an "
    "electric lamp arrived with a diesel generator, and the ledger begins to record fuel in litres and running "
    "hours instead of gallons and wicks. The last change came in 1968, when the station was connected to the "
    "mainland supply and the light was set to run without a keeper.\n\n"
    "The final entry is dated 30 September 1968 and is written by Ruth's successor, a quiet man named Desmond "
    "Vey who had served at the point for eleven years. It follows the old pattern exactly. \"Wind SW, light. "
    "Sea slight. No shipping seen. Lens cleaned. Generator checked, 4,212 hours. Station handed over.\" Below "
    "it, in a different ink, someone has copied out the first entry from 1911, word for word, as if to close "
    "the circle. The ledgers are now kept in the county archive, where anyone may read them, and the light on "
    "Calloway Point still shows two white flashes every fifteen seconds, on every night of the year, whatever "
    "the weather does.\n\n"
    "Questions that readers of the ledger most often ask: How many keepers served at the point? (Seven, not "
    "counting relief keepers who came for a few weeks at a time.) Did the light ever go out? (Twice: once for "
    "forty minutes in 1917 when the supply of wicks ran short, and once for six minutes in 1952 when the new "
    "generator stalled.) What happened to Ruth? (She retired to the village, kept bees, and wrote a short "
    "memoir that the archive also holds.) And why did the keepers write the wind first, every single day? "
    "Because, as Moberly put it in the margin of the very first page, \"the wind is the one thing on this rock "
    "that never asks permission.\"\n";

// Repeated so that the prompt outgrows large contexts too (about 10K tokens under a 100K-token vocabulary).
constexpr int kLongRepeats = 8;

std::string long_text() {
  std::string text;
  for (int i = 0; i < kLongRepeats; ++i) text += kLongText;
  return text;
}

}  // namespace

std::vector<uint8_t> builtin_image_bytes() {
  constexpr uint32_t kWidth = 320, kHeight = 240;
  const std::string header = "P6\n" + std::to_string(kWidth) + " " + std::to_string(kHeight) + "\n255\n";
  std::vector<uint8_t> out(header.begin(), header.end());
  out.reserve(out.size() + 3 * kWidth * kHeight);
  for (uint32_t y = 0; y < kHeight; ++y) {
    for (uint32_t x = 0; x < kWidth; ++x) {
      // A sky-to-sea gradient, a yellow disc, and a checkerboard in the lower right: edges, flat areas and
      // colour for the projector's patches.
      uint8_t r = static_cast<uint8_t>(40 + y / 2), g = static_cast<uint8_t>(90 + y / 3), b = static_cast<uint8_t>(200 - y / 3);
      const int dx = static_cast<int>(x) - 90, dy = static_cast<int>(y) - 70;
      if (dx * dx + dy * dy < 40 * 40) r = 250, g = 215, b = 40;
      if (x >= 200 && y >= 140) {
        const bool dark = ((x / 20) + (y / 20)) % 2 == 0;
        r = g = b = dark ? 30 : 235;
      }
      out.push_back(r);
      out.push_back(g);
      out.push_back(b);
    }
  }
  return out;
}

std::vector<Prompt> builtin_prompts(bool image) {
  std::vector<Prompt> prompts = {
      {"chat",
       "User: I have a small balcony that gets about four hours of sun a day. Which three vegetables should I "
       "try growing there, and why?\nAssistant:"},
      {"code",
       "def merge_sorted(a, b):\n    \"\"\"Merge two sorted lists into one sorted list in O(len(a) + len(b)).\"\"\"\n"
       "    result = []\n    i = j = 0\n"},
      {"math",
       "Question: A tank holds 240 litres. It is filled at 18 litres per minute while a leak drains 3 litres per "
       "minute. Starting empty, how many minutes does it take to fill the tank?\nAnswer: Let's work it out step by "
       "step."},
      {"long", long_text()},
  };
  if (image) {
    prompts.push_back({"image", "Describe this picture: <__media__>\nIt shows", {std::string(kBuiltinImage)}});
  }
  return prompts;
}

}  // namespace strata::gate
