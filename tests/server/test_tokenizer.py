from fake_server import tokenizer
from fake_server.engine.textgen import TextStream


def test_pieces_rejoin_to_the_text():
    for text in ["Hello, world!", "  spaced   out  ", "naïve café — ünïcode", "a" * 50, "", "\n\n"]:
        assert "".join(tokenizer.tokenize(text)) == text


def test_what_counts_as_a_token():
    assert tokenizer.tokenize("Hello, world!") == ["Hello", ",", " world", "!"]
    # a 20-letter word is split into pieces of at most 12 characters
    assert tokenizer.tokenize("internationalization") == ["internationa", "lization"]
    assert tokenizer.tokenize("end  ") == ["end", "  "]


def test_chat_template_counts_markers_as_single_tokens():
    text = tokenizer.render_chat([{"role": "user", "content": "Hello"}])
    assert tokenizer.tokenize(text) == [
        "<|im_start|>", "user", "\nHello", "<|im_end|>", "\n", "<|im_start|>", "assistant", "\n"]


def test_content_parts_are_read_like_a_string():
    parts = [{"type": "text", "text": "Hello "}, {"type": "text", "text": "there"}]
    assert tokenizer.render_chat([{"role": "user", "content": parts}]) == tokenizer.render_chat(
        [{"role": "user", "content": "Hello there"}])


def test_generated_words_are_one_token_each_and_repeatable():
    a, b = TextStream(7, None, 123), TextStream(7, None, 123)
    words = [a.content() for _ in range(50)]
    assert words == [b.content() for _ in range(50)]
    assert tokenizer.count("".join(words)) == 50
    assert words != [TextStream(8, None, 123).content() for _ in range(50)]
