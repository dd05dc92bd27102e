#pragma once
/// \file
/// The reader of envoyproxy/ratelimit's files: a yaml::Handler that takes the first document's maps,
/// lists and scalars (events.hpp) and knows what each is for by where it is (the file, a
/// descriptor, a rate_limit...), then makes the domain's tree from what the descriptors said. A key is
/// read where it belongs, validated and ignored (with a warning) where it means nothing, as
/// envoyproxy/ratelimit does, and refused where it is unknown (keys.hpp).
///
/// envoyproxy/ratelimit checks a file in three passes over different decodings of it: a check of every
/// key and scalar (validateYamlKeys) on a decoding where a key given twice keeps its last value, a typed
/// decoding whose type errors stand even when a later key replaces the value, and its own checks on what
/// the typed decoding kept. One pass here keeps all three: a type error refuses the file at once, while
/// the other refusals wait in the map whose key they are under, and are dropped if that key is given
/// again; whatever is left when the document ends refuses the file.
///
/// No I/O: events in, a Domain (or a ConfigError "file:line: ...") out.
///
///   reader::DomainReader reader(file);
///   yaml::readFirstDocument(text, file, reader);
///   Domain domain = reader.finish();

#include <ratelimit/config/domain.hpp>
#include <ratelimit/config/yaml/events.hpp>
#include <ratelimit/config/yaml/keys.hpp>
#include <ratelimit/config/yaml/scalar.hpp>
#include <ratelimit/config/yaml/written.hpp>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <vector>

namespace swl::ratelimit::reader {

/// Reads one file's document, as yaml::readFirstDocument delivers it, into its Domain. One frame per
/// open map or list says what it is for. Its structure (keys, maps and lists, descriptors, the tree)
/// is domain_reader.cpp's; what each scalar value is, fields.cpp's.
class DomainReader final : public yaml::Handler {
 public:
  /// `file` names the file in messages and in the rules' SourceLocation; it must outlive the reader.
  explicit DomainReader(const std::string& file);

  void scalar(const yaml::Scalar& scalar, bool merged) override;
  void start(bool is_map, int line) override;
  void end() override;

  /// The document is over: what it says, made into the domain, with its warnings. What it says wrong is
  /// a ConfigError.
  Domain finish();

 private:
  using Kind = yaml::Kind;
  using Resolved = yaml::Resolved;
  using Scalar = yaml::Scalar;

  [[noreturn]] void refuse(int line, const std::string& why) const;
  void warn(int line, const std::string& what);
  void defer(Frame& frame, Key key, int line, std::string message);

  // ----- keys
  void takeKey(Frame& map, const Scalar& scalar, bool merged);
  bool takesKnownKey(Frame& map, const Scalar& scalar, const Resolved& resolved);
  void keyGiven(Frame& map, const Scalar& scalar, bool merged);

  // ----- scalars (fields.cpp)
  void takeScalarValue(Frame& top, const Scalar& scalar);
  void checkKind(Frame& map, const Scalar& scalar, const Resolved& resolved);
  static std::string text(const Scalar& scalar, const Resolved& resolved);
  bool flag(const Frame& map, const Scalar& scalar, const Resolved& resolved);
  [[noreturn]] void refuseType(const Frame& map, const std::string& expected);
  void readField(Frame& map, const Scalar& scalar, const Resolved& resolved);
  void readDescriptorField(Frame& map, const Scalar& scalar, const Resolved& resolved);
  void readRateLimitField(Frame& map, const Scalar& scalar, const Resolved& resolved);
  std::uint32_t requestsPerUnit(const Scalar& scalar, const Resolved& resolved);
  std::int64_t weight(const Scalar& scalar, const Resolved& resolved);

  // ----- maps and lists
  Place placeOfChild(Frame& top, bool is_map, int line);
  void startDescriptor(Frame& list, Frame& descriptor);
  void finishDescriptor(Frame& frame);

  // ----- the domain's tree
  Domain makeDomain();
  void addChildren(RuleTree& tree, std::uint32_t parent, std::uint32_t first, std::string& stats_key,
                   std::vector<PathStep>& path);
  [[noreturn]] static void refuseRepeat(const Domain& domain, const RuleTree::Repeat& repeat);

  const std::string& file_;
  std::vector<Frame> frames_;
  // Deques: they grow without moving what they hold, so a large file is never held twice.
  std::deque<WrittenDescriptor> written_;
  std::size_t written_text_ = 0;               // the keys' and values' bytes
  std::vector<WrittenRateLimit> rate_limits_;  // the open descriptors' rate_limits, by level
  std::vector<std::string> warnings_;
  std::size_t warnings_dropped_ = 0;
  std::size_t descriptors_read_ = 0;
  Domain domain_;
  int domain_line_ = 1;
  bool has_domain_ = false;
};

}  // namespace swl::ratelimit::reader
