#include "chess/position.h"

namespace fz {

std::string Move::uci() const {
    static const char promotions[] = "  nbrq";
    std::string text = {char('a' + (from() & 7)), char('1' + (from() >> 3)), char('a' + (to() & 7)),
                        char('1' + (to() >> 3))};
    if (promotion()) text += promotions[promotion()];
    return text;
}

}  // namespace fz
