// The values of a flag that takes one of a few names (--dtype, --bos, --scope, --cosines):
// one table of (name, value) per flag, parsed and listed one way for every command.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "common/errors.hpp"

namespace attngeo {

template <class Value>
struct FlagChoice {
    const char* name;
    Value value;
};

// "a, b or c": the names of `choices` as a message lists them.
template <class Value, std::size_t K>
std::string choice_names(const FlagChoice<Value> (&choices)[K]) {
    std::string names;
    for (std::size_t i = 0; i < K; ++i)
        names += (i == 0 ? "" : i + 1 == K ? " or " : ", ") + std::string(choices[i].name);
    return names;
}

// The names of `choices` in table order: a CLI's list of allowed values.
template <class Value, std::size_t K>
std::vector<std::string> choice_list(const FlagChoice<Value> (&choices)[K]) {
    std::vector<std::string> names;
    for (const FlagChoice<Value>& choice : choices)
        names.push_back(choice.name);
    return names;
}

// The value named `text`; InputError "FLAG: 'TEXT', expected a, b or c" otherwise.
template <class Value, std::size_t K>
Value parse_choice(const std::string& text, const std::string& flag,
                   const FlagChoice<Value> (&choices)[K]) {
    for (const FlagChoice<Value>& choice : choices)
        if (text == choice.name) return choice.value;
    throw InputError(flag + ": '" + text + "', expected " + choice_names(choices));
}

// The name of `value` in `choices` ("" when it has none).
template <class Value, std::size_t K>
const char* choice_name(Value value, const FlagChoice<Value> (&choices)[K]) {
    for (const FlagChoice<Value>& choice : choices)
        if (choice.value == value) return choice.name;
    return "";
}

}  // namespace attngeo
