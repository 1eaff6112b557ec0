//! Words that carry no theme on their own: English function words, contractions as the tokenizer
//! writes them (apostrophes dropped: "don't" -> "dont"), and filler common in survey answers.

use std::collections::HashSet;
use std::sync::LazyLock;

/// One word per whitespace run; kept in a string so the list stays readable.
const STOP_WORDS: &str = "
about above actually after again against ain all almost also although always am among an and
another any anyone anything are aren arent around as at be because been before being below
between both but by can cannot cant could couldnt did didnt do does doesnt doing done dont down
during each either else enough etc even ever every everything few for from further get gets
getting give go goes going got had hadnt has hasnt have havent having he hed her here heres hers
herself hes him himself his how however hows id if ill im in into is isnt it itd itll its itself
ive just kind kinda know least less let lets like lot lots made make makes many may maybe me
might mine more most much must mustnt my myself need needs neither never no none nor not nothing
now of off often ok okay on once one only or other others otherwise ought our ours ourselves out
over own per perhaps please pretty quite rather really same say says see seem seems shall shant
she shed shell shes should shouldnt since so some something sometimes somewhat sort still such
sure than thank thanks that thatll thats the their theirs them themselves then there therefore
theres these they theyd theyll theyre theyve thing things think this those though through thus
to too toward towards under until up upon us use used using very via want wants was wasnt way we
wed well went were werent weve what whatever whats when whens where wheres whether which while
who whoever whole whom whos whose why whys will with within without wont would wouldnt yes yet
you youd youll your youre yours yourself yourselves youve
";

static SET: LazyLock<HashSet<&'static str>> =
    LazyLock::new(|| STOP_WORDS.split_whitespace().collect());

/// Whether a lowercase, apostrophe-free token is a stop word.
pub(crate) fn is_stop_word(token: &str) -> bool {
    SET.contains(token)
}

#[cfg(test)]
pub(crate) fn all() -> impl Iterator<Item = &'static str> {
    STOP_WORDS.split_whitespace()
}
