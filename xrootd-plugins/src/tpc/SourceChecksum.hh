// The source's adler32 of the file a TPC pull copies, asked for while the data moves.
//
// A source without a stored checksum computes it by reading the whole file, in the
// thread that serves the client's connection; asked after the reads on the data
// connection it adds that time to every pull (3.4 s for 4 GiB on the bench host).
// Asked when the pull starts, on a connection of its own (XrdCl keys its channels
// on `xrdcl.intent`, so the query does not queue behind the reads), it is computed
// while the data moves and is usually ready by the last byte.
#pragma once

#include <cstdint>
#include <future>
#include <string>

namespace wanio {

bool parseAdlerHex(const std::string& text, std::uint32_t& out);
std::string adlerHex(std::uint32_t value);

struct ChecksumAnswer {
    bool ok = false;
    std::uint32_t adler = 0;
    std::string error;  // why there is no answer when !ok
};

// One checksum query to the source, on the data connection (separateChannel false)
// or on a connection of its own.
ChecksumAnswer querySourceAdler(const std::string& sourceUrl, bool separateChannel);

class SourceChecksum {
  public:
    // Starts the query on its own connection.
    explicit SourceChecksum(const std::string& sourceUrl);
    // The answer; if the early query failed, asks once more on the data connection
    // (a source that refuses a second connection still gets verified).
    ChecksumAnswer wait();

  private:
    std::string sourceUrl_;
    std::future<ChecksumAnswer> early_;
};

}  // namespace wanio
