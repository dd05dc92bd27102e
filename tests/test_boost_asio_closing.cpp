// test_asio_closing.cpp again, on Boost.Asio (swl::boost_asio defines SWL_USE_BOOST_ASIO).
#include "test_asio_closing.cpp"
