from fake_server import tokenizer
from fake_server.engine.textgen import TextStream


def test_pieces_rejoin_to_the_text() -> None:
    for text in ["Hello, world!", "  spaced   out  ", "naïve café — ünïcode", "a" * 50, "", "\n\n"]:
        assert "".join(tokenizer.tokenize(text)) == text


def test_what_counts_as_a_token() -> None:
    assert tokenizer.tokenize("Hello, world!") == ["Hello", ",", " world", "!"]
    # a 20-letter word is split into pieces of at most 12 characters
    assert tokenizer.tokenize("internationalization") == ["internationa", "lization"]
    assert tokenizer.tokenize("end  ") == ["end", "  "]


def test_chat_template_counts_markers_as_single_tokens() -> None:
    text = tokenizer.render_chat([{"role": "user", "content": "Hello"}])
    assert tokenizer.tokenize(text) == [
        "<|im_start|>",
        "user",
        "\nHello",
        "<|im_end|>",
        "\n",
        "<|im_start|>",
        "assistant",
        "\n",
    ]


def test_content_parts_are_read_like_a_string() -> None:
    parts = [{"type": "text", "text": "Hello "}, {"type": "text", "text": "there"}]
    assert tokenizer.render_chat([{"role": "user", "content": parts}]) == tokenizer.render_chat(
        [{"role": "user", "content": "Hello there"}]
    )


def test_generated_words_are_one_token_each_and_repeatable() -> None:
    a, b = TextStream(7, None, 123), TextStream(7, None, 123)
    words = [a.content() for _ in range(50)]
    assert words == [b.content() for _ in range(50)]
    assert tokenizer.count("".join(words)) == 50
    assert words != [TextStream(8, None, 123).content() for _ in range(50)]


def test_the_ledger_counts_a_prompts_own_text_apart_from_what_the_chat_template_adds() -> None:
    """`message_tokens` is what a client's "prompt of P tokens" controls: its messages' text, whatever markers,
    role names and system prompt the server's template wraps around it (those count in `prompt_tokens`)."""
    import httpx

    from fake_server import serve

    system, user = "Be brief, please.", "one two three four five six seven"
    with serve(
        default_system_prompt="You are a helpful assistant.", served_model_name=["m"], token_rate=2000
    ) as server:
        for messages in (
            [{"role": "user", "content": user}],
            [{"role": "system", "content": system}, {"role": "user", "content": user}],
        ):
            answer = httpx.post(
                server.openai_base_url + "/chat/completions",
                json={"model": "m", "messages": messages, "max_tokens": 2},
                timeout=10,
            )
            assert answer.status_code == 200
        own, with_system = server.ledger()[-2:]
    assert own["message_tokens"] == tokenizer.count(user) == 7
    # the server's own system prompt is the template's: in prompt_tokens, not in the client's text
    assert (
        own["prompt_tokens"]
        == tokenizer.count(tokenizer.render_chat([{"role": "user", "content": user}], "You are a helpful assistant."))
        > own["message_tokens"] + 6
    )
    assert with_system["message_tokens"] == tokenizer.count(system) + tokenizer.count(user)
