// The built-in prompt set of `strata gate`: one prompt each of chat, code and arithmetic, and a long text that
// spans many prefill windows (cut to what the context holds, so it fits any launch).
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

std::vector<Prompt> builtin_prompts() {
  return {
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
}

}  // namespace strata::gate
